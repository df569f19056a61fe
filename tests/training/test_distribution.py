"""Two replicas (MirroredStrategy on two logical CPUs) and two workers (MultiWorkerMirroredStrategy,
two processes on 127.0.0.1) follow one device's loss trajectory step by step on the same data."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distributed_run  # noqa: E402

pytestmark = pytest.mark.xdist_group("distribution")  # both tests read the one-device run

# Same global batch, same weights, no dropout: only the order of floating-point sums differs.
TOLERANCE = 1e-4


def _env(**extra):
    inherited = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}  # only the test sets a cluster
    return {**inherited, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": os.pathsep.join(sys.path), **extra}


def _start(strategy, weights, output, **env):
    return subprocess.Popen([sys.executable, os.path.join(HERE, "distributed_run.py"), strategy, weights, output],
                            env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process):
    out, _ = process.communicate(timeout=420)
    assert process.returncode == 0, out[-3000:]


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: per-step losses} of the one-device reference, the mirrored run and both workers.

    The three processes start at once and the reference runs in this process meanwhile: one
    device needs no device set-up before TensorFlow starts."""
    folder = tmp_path_factory.mktemp("distribution")
    weights = str(folder / "initial.weights.h5")
    distributed_run.build().save_weights(weights)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    processes = {"mirrored": _start("mirrored", weights, str(folder / "mirrored.json"))}
    for i in range(2):
        processes[f"worker{i}"] = _start(
            "multi_worker",
            weights,
            str(folder / f"worker{i}.json"),
            TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
        )
    distributed_run.main("one_device", weights, str(folder / "one_device.json"))
    for process in processes.values():
        _finish(process)
    return {name: json.loads((folder / f"{name}.json").read_text()) for name in ["one_device", *processes]}


def _assert_follows(result, reference, replicas):
    assert result["replicas"] == replicas
    assert len(result["loss"]) == len(reference["loss"]) == distributed_run.STEPS
    assert reference["loss"][-1] < reference["loss"][0] - 0.1, "the reference run did not train"
    for key in ("loss", "mlm_loss", "nsp_loss"):
        np.testing.assert_allclose(result[key], reference[key], rtol=TOLERANCE, atol=TOLERANCE, err_msg=key)


def test_mirrored_two_replicas_follow_one_device(runs):
    _assert_follows(runs["mirrored"], runs["one_device"], replicas=2)


def test_multi_worker_two_processes_follow_one_device(runs):
    for i in range(2):
        _assert_follows(runs[f"worker{i}"], runs["one_device"], replicas=2)
