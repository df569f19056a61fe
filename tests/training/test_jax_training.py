"""Training on Keras' JAX backend (tf.data on the host, keras.distribution over the devices), in
fresh processes with 2 virtual CPU devices (`--xla_force_host_platform_device_count=2`): a
data-parallel step is the one-device step, and a pre-training run killed on 2 devices resumes
and ends at the same step."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.backend_env import backend_env
from tests.training.kill_run import kill_after_first_epoch

pytest.importorskip("jax", reason="jax (CPU) is in the [test] extra")
pytestmark = pytest.mark.slow

ENV = backend_env("jax", "--xla_force_host_platform_device_count=2")

# Two AdamW steps (clipped, decayed) of a BERT-Tiny pretrainer from the same weights on the same
# batch, on one device and data parallel over two; saves the losses and weights.
STEP = textwrap.dedent("""
    import sys
    import numpy as np
    import keras
    from keras_bert_lib import BertPretrainer, bert_tiny
    from keras_bert_lib.training import create_optimizer
    from keras_bert_lib.training.strategy import create_distribution

    assert len(keras.distribution.list_devices()) == 2
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 100, (8, 16)).astype("int32"), "segment_ids": np.zeros((8, 16), "int32"),
         "padding_mask": np.array([[1] * 16] * 4 + [[1] * 9 + [0] * 7] * 4, "int32"),
         "masked_positions": rng.integers(1, 9, (8, 3)).astype("int32")}
    y = {"mlm_logits": rng.integers(5, 100, (8, 3)).astype("int32"),
         "nsp_logits": rng.integers(0, 2, 8).astype("int32")}
    sample_weight = {"mlm_logits": np.ones((8, 3), "float32"), "nsp_logits": np.ones(8, "float32")}

    def step(distribution):
        keras.utils.set_random_seed(0)
        with distribution.scope() if distribution else keras.name_scope("one"):
            model = BertPretrainer(bert_tiny(vocab_size=100, num_hidden_layers=2))
            model(x)
            model.load_weights(sys.argv[1]) if distribution else model.save_weights(sys.argv[1])
            model.compile(optimizer=create_optimizer("adamw", 1e-2, 1, 10), jit_compile=True)
            start = [np.asarray(w) for w in model.get_weights()]
            for _ in range(2):  # the schedule's first step has learning rate 0 (warm-up)
                logs = model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)
        shardings = {str(v.value.sharding) for v in model.weights}
        return logs["loss"], [np.asarray(w) for w in model.get_weights()], shardings, start

    loss_1, weights_1, _, start = step(None)
    distribution = create_distribution("auto")  # two devices: data parallel
    assert isinstance(distribution, keras.distribution.DataParallel)
    loss_2, weights_2, shardings, _ = step(distribution)
    assert any("NamedSharding" in s for s in shardings), shardings  # the weights live on the 2-device mesh
    np.savez(sys.argv[2], loss=[loss_1, loss_2], **{f"one_{i}": w for i, w in enumerate(weights_1)},
             **{f"two_{i}": w for i, w in enumerate(weights_2)}, **{f"start_{i}": w for i, w in enumerate(start)})
""")


def test_a_data_parallel_step_equals_the_one_device_step(tmp_path):
    out = tmp_path / "step.npz"
    done = subprocess.run([sys.executable, "-c", STEP, str(tmp_path / "start.weights.h5"), str(out)],
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    saved = np.load(out)
    one, two = saved["loss"]
    assert abs(one - two) <= 1e-5 * abs(one), (one, two)
    count = len([k for k in saved if k.startswith("one_")])
    assert count > 20
    for i in range(count):
        np.testing.assert_allclose(saved[f"two_{i}"], saved[f"one_{i}"], atol=2e-6, err_msg=f"weight {i}")
    moved = [float(np.max(np.abs(saved[f"one_{i}"] - saved[f"start_{i}"]))) for i in range(count)]
    assert sum(m > 1e-3 for m in moved) > count // 2, moved  # the steps moved the weights (lr 1e-2)


def test_a_jax_pretraining_run_on_two_devices_killed_resumes_and_finishes(tmp_path, tiny_corpus):
    """`KERAS_BACKEND=jax keras-bert pretrain` on 2 devices: SIGKILL after an epoch, the same
    command again continues from the backup and ends at the same step, its loss lower than at
    the start, with Keras weights checkpoints (TensorFlow cannot track JAX variables)."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "keras_bert_lib.cli", "pretrain", "--corpus", str(tiny_corpus),
               "--vocab-size", "300", "--output-dir", str(out), "--steps", "30", "--steps-per-epoch", "3",
               "--batch-size", "8", "--max-seq-length", "32", "--max-predictions", "5", "--warmup-steps", "5",
               "--eval-fraction", "0.2", "--dupe-factor", "2", "--checkpoint-every", "6"]
    epochs_before = kill_after_first_epoch(command, ENV, out, 300)
    history = out / "history.csv"

    again = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Data parallel over 2 devices" in again.stderr and "Resuming from the backup of epoch" in again.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 30
    rows = history.read_text().splitlines()
    epochs = [int(line.split(",")[0]) for line in rows[1:]]
    assert epochs[-1] == 9 and min(epochs[epochs_before:]) >= epochs_before - 1
    column = rows[0].split(",").index("loss")
    losses = [float(line.split(",")[column]) for line in rows[1:]]
    assert losses[-1] < losses[0] - 0.5, losses
    assert sorted(os.listdir(out / "checkpoints"))[-1].endswith(".weights.h5")
