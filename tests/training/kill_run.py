"""Starts a training command and kills it (SIGKILL) once its first epoch is logged."""

import signal
import subprocess
import time


def kill_after_first_epoch(command, env, out, seconds=240):
    """Runs `command` until `out/history.csv` logs an epoch, then SIGSTOP + SIGKILL; returns the
    number of epochs it had logged. With ten epochs in the run, nine are left, so the kill lands
    mid-run however fast the machine is (polled every 0.1 s; SIGSTOP freezes it for the check)."""
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    history = out / "history.csv"
    deadline = time.time() + seconds
    while time.time() < deadline and (not history.exists() or len(history.read_text().splitlines()) < 2):
        if first.poll() is not None:
            break
        time.sleep(0.1)
    assert history.exists(), first.stderr.read()[-3000:] if first.poll() is not None else "no epoch finished"
    first.send_signal(signal.SIGSTOP)
    first.send_signal(signal.SIGKILL)
    first.wait()
    epochs = len(history.read_text().splitlines()) - 1
    assert epochs < 10, "the run finished before it could be killed"
    return epochs
