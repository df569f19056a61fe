"""The README's main job, measured: `keras-bert quickstart` in a scratch folder, its wall time,
held-out accuracy against the majority class, and its parity table (one row per exported artefact:
largest difference from Keras, cosine, agreement, held-out accuracy, size and median latency).

    python -m bench.quickstart [--keep DIR]

A few minutes of a 2-core CPU. The run is the command a user types, in a process of its own.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench.common import write_results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="run in this folder and keep it (default: a temporary folder, removed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        start = time.perf_counter()
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "keras-bert"), "quickstart"], cwd=folder,
                       check=True)
        seconds = time.perf_counter() - start
        with open(os.path.join(folder, "runs", "quickstart_classify", "report.json"), encoding="utf-8") as f:
            report = json.load(f)
    rows = [{k: v for k, v in row.items()} for row in report["exports"]]
    write_results(__file__, rows, seconds=round(seconds, 1), held_out_accuracy=report["held_out"]["accuracy"],
                  majority_class=report["baselines"]["majority class"])


if __name__ == "__main__":
    main()
