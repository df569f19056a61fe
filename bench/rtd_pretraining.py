"""ELECTRA's replaced-token detection, a longer run than the test's: `keras-bert pretrain --objective rtd`.

    python -m bench.rtd_pretraining [--steps 2000] [--steps-per-epoch 200] [--preset bert_tiny]
                                    [--learning-rate 5e-4]

The built-in corpus (Python's standard-library docstrings), its learned WordPiece vocabulary,
BERT-Tiny's shape as the discriminator and a generator a quarter of its width, 64-token segments
of whole sentences, 10 masked positions each, batches of 32, the paper's learning rate, XLA on.
One row per epoch, held out: the discriminator's AUC (0.5: chance, an untrained discriminator),
its accuracy over real tokens, the precision and recall of its "replaced" calls, the share of
tokens replaced (the precision calling at random would get), and the generator's masked-LM
accuracy against always guessing the most frequent token. As the generator learns, its samples get
harder to find, so the AUC need not rise every epoch. The run's folder is under bench/.cache.
"""

import argparse
import csv
import json
import os
import shutil
import time

from bench.common import CACHE, write_results

COLUMNS = ("replaced_auc", "rtd_accuracy", "replaced_precision", "replaced_recall", "replaced_rate", "mlm_accuracy")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps (default: 2000)")
    parser.add_argument("--steps-per-epoch", type=int, default=200, help="steps between held-out rows (default: 200)")
    parser.add_argument("--preset", default="bert_tiny", help="the discriminator's shape (default: bert_tiny)")
    parser.add_argument("--learning-rate", type=float, default=5e-4, help="peak learning rate (default: 5e-4)")
    args = parser.parse_args()

    from keras_bert_lib.cli import main as keras_bert

    out = os.path.join(CACHE, "rtd_pretraining")
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    assert keras_bert(["pretrain", "--objective", "rtd", "--sentence-task", "none", "--preset", args.preset,
                       "--output-dir", out, "--steps", str(args.steps), "--steps-per-epoch", str(args.steps_per_epoch),
                       "--warmup-steps", str(args.steps // 20), "--learning-rate", str(args.learning_rate),
                       "--max-seq-length", "64", "--max-predictions", "10", "--batch-size", "32"]) == 0
    seconds = time.perf_counter() - start
    report = json.load(open(os.path.join(out, "report.json"), encoding="utf-8"))
    rows = []
    for row in csv.DictReader(open(os.path.join(out, "history.csv"), encoding="utf-8")):
        rows.append({"step": (int(row["epoch"]) + 1) * args.steps_per_epoch,
                     **{name: round(float(row[f"val_{name}"]), 4) for name in COLUMNS}})
    write_results(__file__, rows, most_frequent_token_baseline=round(report["baselines"]["mlm_most_frequent_token"], 4),
                  eval_instances=report["eval_instances"], run_seconds=round(seconds))


if __name__ == "__main__":
    main()
