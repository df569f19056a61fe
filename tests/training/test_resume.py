"""A pre-training run killed with SIGKILL resumes from its last backup and ends at the same step."""

import json
import os
import sys

import pytest

from tests.training.kill_run import kill_after_first_epoch


@pytest.mark.slow
def test_sigkill_then_the_same_command_resumes_and_finishes(tmp_path, tiny_corpus):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "keras_bert_lib.cli", "pretrain", "--corpus", str(tiny_corpus),
               "--vocab-size", "300", "--output-dir", str(out),
               "--steps", "30", "--steps-per-epoch", "3", "--batch-size", "8", "--max-seq-length", "32",
               "--max-predictions", "5", "--warmup-steps", "5", "--eval-fraction", "0.2", "--dupe-factor", "2",
               "--no-jit-compile"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    epochs_before = kill_after_first_epoch(command, env, out, 240)
    history = out / "history.csv"
    assert (out / "backup").is_dir()

    from keras_bert_lib.cli import main

    assert main(command[3:]) == 0  # the same command again, in this process this time
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 30
    epochs = [int(line.split(",")[0]) for line in history.read_text().splitlines()[1:]]
    assert epochs[-1] == 9 and epochs[:epochs_before] == list(range(epochs_before))
    assert min(epochs[epochs_before:]) >= epochs_before - 1, "the restart began again from epoch 0"
