"""A pre-training run killed with SIGKILL resumes from its last backup and ends at the same step."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.slow
def test_sigkill_then_the_same_command_resumes_and_finishes(tmp_path, tiny_corpus):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "keras_bert_lib.cli", "pretrain", "--corpus", str(tiny_corpus),
               "--vocab-size", "300", "--output-dir", str(out),
               "--steps", "30", "--steps-per-epoch", "3", "--batch-size", "8", "--max-seq-length", "32",
               "--max-predictions", "5", "--warmup-steps", "5", "--eval-fraction", "0.2", "--dupe-factor", "2",
               "--no-jit-compile"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    history = out / "history.csv"
    deadline = time.time() + 240
    # Ten epochs, killed as soon as one is logged: nine are left, so the kill lands mid-run
    # however fast the machine is (polled every 0.1 s; SIGSTOP freezes it at once for the check).
    while time.time() < deadline and (not history.exists() or len(history.read_text().splitlines()) < 2):
        if first.poll() is not None:
            break
        time.sleep(0.1)
    assert history.exists(), first.stderr.read()[-2000:] if first.poll() is not None else "no epoch finished"
    first.send_signal(signal.SIGSTOP)
    first.send_signal(signal.SIGKILL)
    first.wait()
    epochs_before = len(history.read_text().splitlines()) - 1
    assert epochs_before < 10, "the run finished before it could be killed"
    assert (out / "backup").is_dir()

    from keras_bert_lib.cli import main

    assert main(command[3:]) == 0  # the same command again, in this process this time
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 30
    epochs = [int(line.split(",")[0]) for line in history.read_text().splitlines()[1:]]
    assert epochs[-1] == 9 and epochs[:epochs_before] == list(range(epochs_before))
    assert min(epochs[epochs_before:]) >= epochs_before - 1, "the restart began again from epoch 0"
