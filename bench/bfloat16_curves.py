"""The pre-training quick-start in float32 and in mixed_bfloat16: both loss curves in one PNG.

    python -m bench.bfloat16_curves [--steps 880] [--steps-per-epoch 110] [--output-dir runs/bfloat16_curves]

Runs `keras-bert pretrain`'s quick-start (BERT-Tiny on the stdlib corpus, MLM + NSP, the same
seed and data) once per dtype, each in its own folder under --output-dir (a finished run is
reused), then draws training and held-out loss of both in `curves.png` and prints, per epoch, the
two losses and their difference, with each run's wall time.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench.common import write_results
from keras_bert_lib.runs import PretrainConfig, run_pretraining
from keras_bert_lib.training.curves import read_history

DTYPES = ("float32", "mixed_bfloat16")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=880, help="optimizer steps per run (default: 880)")
    parser.add_argument("--steps-per-epoch", type=int, default=110, help="steps between curve points (default: 110)")
    parser.add_argument("--output-dir", default="runs/bfloat16_curves", help="folder of both runs and the PNG "
                                                                           "(default: runs/bfloat16_curves)")
    args = parser.parse_args()
    histories, seconds = {}, {}
    for dtype in DTYPES:
        folder = os.path.join(args.output_dir, dtype)
        start = time.perf_counter()
        run_pretraining(PretrainConfig(output_dir=folder, steps=args.steps, steps_per_epoch=args.steps_per_epoch,
                                       dtype=dtype, warmup_steps=min(100, args.steps // 10)))
        seconds[dtype] = time.perf_counter() - start
        histories[dtype] = read_history(os.path.join(folder, "history.csv"))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for dtype, colour in zip(DTYPES, ("tab:blue", "tab:orange")):
        steps = [args.steps_per_epoch * (i + 1) for i in range(len(histories[dtype]["loss"]))]
        ax.plot(steps, histories[dtype]["loss"], color=colour, label=f"{dtype} training")
        ax.plot(steps, histories[dtype]["val_loss"], color=colour, linestyle="--", label=f"{dtype} held-out")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (MLM + NSP)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.output_dir, "curves.png"), dpi=120)
    rows = []
    print(f"\n{'epoch':>5} {'float32':>9} {'bfloat16':>9} {'difference':>11}   (held-out loss)")
    for i, (a, b) in enumerate(zip(histories["float32"]["val_loss"], histories["mixed_bfloat16"]["val_loss"])):
        print(f"{i + 1:>5} {a:9.4f} {b:9.4f} {b - a:+11.4f}")
        rows.append({"epoch": i + 1, "float32": a, "mixed_bfloat16": b})
    print("wall time: " + ", ".join(f"{d} {s:.0f} s" for d, s in seconds.items()))
    write_results(__file__, rows, seconds=seconds, steps=args.steps)


if __name__ == "__main__":
    main()
