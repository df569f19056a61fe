"""A fine-tuning run killed with SIGKILL (inside a backup's write, then in the middle of an epoch)
and resumed ends with exactly the weights of the same run left alone; while it runs, a second
command on its folder is refused, naming it."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.export import load_model_file

pytestmark = pytest.mark.slow
KILLED_AT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "training", "killed_at.py")


def _argv(checkpoint, reviews, out):
    # 64 texts, batches of 16: 4 steps an epoch; dropout 0.1 in the encoder and before the head
    return ["finetune", "classify", "--checkpoint", str(checkpoint), "--train", reviews["train"], "--validation",
            reviews["validation"], "--output-dir", str(out), "--max-seq-length", "16", "--epochs", "3",
            "--batch-size", "16", "--no-jit-compile"]


def _run(argv, moment=None):
    command = [sys.executable, KILLED_AT, moment, "--", *argv] if moment else \
        [sys.executable, "-m", "keras_bert_lib.cli", *argv]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def _optimizer_values(model_file):
    """How many arrays of the optimizer's a .keras file holds."""
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(model_file) as archive, h5py.File(io.BytesIO(archive.read("model.weights.h5"))) as f:
        found = []
        if "optimizer" in f:
            f["optimizer"].visititems(lambda name, item: found.append(name) if isinstance(item, h5py.Dataset) else None)
        return len(found)


def _holder(folder):
    try:
        return (folder / ".lock").read_text().strip()
    except FileNotFoundError:
        return None


def test_killed_twice_and_resumed_equals_the_run_left_alone(checkpoint, few_reviews, tmp_path, capsys):
    alone, killed = tmp_path / "alone", tmp_path / "killed"
    assert main(_argv(checkpoint, few_reviews, alone)) == 0  # in this process: the seeds are the run's own
    capsys.readouterr()  # its progress; the refusal below is read alone

    # A kill inside the write of epoch 2's backup: epoch 1's backup stays, and the half-written one is ignored.
    assert _run(_argv(checkpoint, few_reviews, killed), "backup:2").returncode == -9
    staged, kept = sorted(os.listdir(killed / "backup"))
    assert staged.startswith(".epoch-0002-") and kept == "epoch-0001"
    # A kill in the middle of epoch 3 (after step 10 of 12), the run resumed from epoch 1.
    done = _run(_argv(checkpoint, few_reviews, killed), "step:10")
    assert done.returncode == -9 and "Resuming from the backup of epoch 1 of 3" in done.stderr, done.stderr[-2000:]
    assert sorted(os.listdir(killed / "backup")) == ["epoch-0001", "epoch-0002"]
    (killed / "checkpoints" / "ckpt-11_temp").mkdir(parents=True)  # a kill inside a checkpoint write leaves it

    # The same command again finishes; a second one meanwhile is refused, naming the first.
    last = subprocess.Popen([sys.executable, "-m", "keras_bert_lib.cli", *_argv(checkpoint, few_reviews, killed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    deadline = time.monotonic() + 120
    assert (killed / ".lock").exists()  # left by the killed process: taken over without a word
    while _holder(killed) != str(last.pid) and last.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    last.send_signal(signal.SIGSTOP)  # it holds the lock until it goes on
    try:
        assert main(_argv(checkpoint, few_reviews, killed)) == 2
    finally:
        last.send_signal(signal.SIGCONT)
    refused = capsys.readouterr().err.strip()
    assert re.fullmatch(rf"keras-bert finetune: {re.escape(str(killed))} is being written by process {last.pid} "
                        r"\(keras-bert\): wait for it to end, stop it, or choose another --output-dir\.", refused)
    out, err = last.communicate(timeout=300)
    assert last.returncode == 0 and "Resuming from the backup of epoch 2 of 3" in err, err[-2000:]
    assert not (killed / "checkpoints" / "ckpt-11_temp").exists() and not (killed / "backup").exists()
    assert not (killed / ".lock").exists()

    first, _ = load_model_file(alone)
    second, _ = load_model_file(killed)
    for a, b in zip(first.get_weights(), second.get_weights(), strict=True):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)
    assert _optimizer_values(killed / "model.keras") <= 2  # its step (and rate): no Adam moments in model.keras
    history = [line.split(",")[:5] for line in (killed / "history.csv").read_text().splitlines()]
    want = [line.split(",")[:5] for line in (alone / "history.csv").read_text().splitlines()]
    assert history[0] == want[0] and len(history) == len(want)
    # each epoch's metrics as the run left alone logged them, to float32's last bits (the same sums
    # in another process can round apart in the 8th digit)
    np.testing.assert_allclose(np.array(history[1:], float), np.array(want[1:], float), rtol=1e-6, atol=0)
    assert [row[0] for row in history[1:]] == ["0", "1", "2"]  # each epoch once
