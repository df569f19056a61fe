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
def one_device(tmp_path_factory):
    folder = tmp_path_factory.mktemp("distribution")
    model = distributed_run.build()
    model.save_weights(str(folder / "initial.weights.h5"))
    process = _start("one_device", str(folder / "initial.weights.h5"), str(folder / "one_device.json"))
    _finish(process)
    return folder, json.loads((folder / "one_device.json").read_text())


def _assert_follows(result, reference, replicas):
    assert result["replicas"] == replicas
    assert len(result["loss"]) == len(reference["loss"]) == distributed_run.STEPS
    assert reference["loss"][-1] < reference["loss"][0] - 0.1, "the reference run did not train"
    for key in ("loss", "mlm_loss", "nsp_loss"):
        np.testing.assert_allclose(result[key], reference[key], rtol=TOLERANCE, atol=TOLERANCE, err_msg=key)


def test_mirrored_two_replicas_follow_one_device(one_device):
    folder, reference = one_device
    _finish(_start("mirrored", str(folder / "initial.weights.h5"), str(folder / "mirrored.json")))
    _assert_follows(json.loads((folder / "mirrored.json").read_text()), reference, replicas=2)


def test_multi_worker_two_processes_follow_one_device(one_device):
    folder, reference = one_device
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    workers = [_start("multi_worker", str(folder / "initial.weights.h5"), str(folder / f"worker{i}.json"),
                      TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
               for i in range(2)]
    for worker in workers:
        _finish(worker)
    for i in range(2):
        _assert_follows(json.loads((folder / f"worker{i}.json").read_text()), reference, replicas=2)
