"""Optimizers, schedule and the NaN guard."""

import sys

import keras
import numpy as np
import pytest

from keras_bert_lib import BertPretrainer, bert_tiny
from keras_bert_lib.training import StopOnNonFiniteLoss, WarmupLinearDecay, create_optimizer


def test_warmup_then_linear_decay():
    schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=110)
    values = [float(schedule(s)) for s in (0, 5, 10, 60, 110, 200)]
    np.testing.assert_allclose(values, [0.0, 5e-5, 1e-4, 5e-5, 0.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_no_weight_decay_on_layer_norm_and_biases(name):
    model = BertPretrainer(bert_tiny(num_hidden_layers=1, vocab_size=50))
    optimizer = create_optimizer(name, warmup_steps=1, total_steps=10)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert "layer_0/attention/query/kernel" in decayed and "token_embedding/embeddings" in decayed
    assert not [p for p in decayed if p.endswith(("gamma", "beta", "bias"))]


def _adamw_steps(optimizer, steps=3, seed=0):
    """The weights of a one-block encoder after `steps` clipped AdamW steps on a fixed loss."""
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    encoder = bert_tiny(num_hidden_layers=1, vocab_size=100)
    rng = np.random.default_rng(seed)
    x = {"token_ids": tf.constant(rng.integers(0, 100, (4, 8)), tf.int32), "segment_ids": tf.zeros((4, 8), tf.int32),
         "padding_mask": tf.ones((4, 8), tf.int32)}

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(encoder(x)["pooled_output"] ** 2)
        optimizer.apply(tape.gradient(loss, encoder.trainable_variables), encoder.trainable_variables)

    for _ in range(steps):
        step()
    return {v.path: v.numpy() for v in encoder.trainable_variables}


@pytest.mark.slow
def test_adamw_fused_step_is_keras_adamw():
    """Our AdamW runs TensorFlow's fused Adam kernel: the same update as Keras' AdamW (the token
    embedding's sparse gradient included), to float32 rounding."""
    from keras_bert_lib.training.optimizers import AdamW

    options = dict(learning_rate=1e-2, weight_decay=0.01, global_clipnorm=1.0, epsilon=1e-6)
    ours, theirs = AdamW(**options), keras.optimizers.AdamW(**options)
    for optimizer in (ours, theirs):
        optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    got, want = _adamw_steps(ours), _adamw_steps(theirs)
    for path, value in want.items():  # updates of about lr = 1e-2: 1e-5 is float32 rounding, not a formula
        np.testing.assert_allclose(got[path], value, atol=1e-5, err_msg=path)
    assert not np.allclose(got["token_embedding/embeddings"], _adamw_steps(AdamW(**options), steps=0)[
        "token_embedding/embeddings"])  # the embedding rows of the batch moved


@pytest.mark.parametrize("scale", [0.01, 10.0, float("nan")])
def test_clipping_keeps_a_sparse_gradient_sparse_and_equals_keras_on_the_dense_one(scale):
    """The token embedding's gradient (repeated ids) stays a tf.IndexedSlices of its ids' rows, and
    clipped it equals Keras' clip_by_global_norm of the dense gradients: under the norm (left as
    it is) and over it (scaled to norm 1). A NaN norm makes every value NaN, as in Keras (whose
    dense gradient is NaN in the rows of no id too)."""
    import tensorflow as tf
    from keras.src.optimizers.base_optimizer import clip_by_global_norm as keras_clip

    from keras_bert_lib.keras_internals import clip_by_global_norm

    rng = np.random.default_rng(0)
    rows = tf.IndexedSlices(tf.constant(rng.normal(size=(5, 4)) * scale, tf.float32), tf.constant([3, 7, 3, 3, 0]),
                            tf.constant([9, 4]))
    dense = tf.constant(rng.normal(size=(2, 3)) * scale, tf.float32)
    got = clip_by_global_norm([rows, None, dense], 1.0)
    assert isinstance(got[0], tf.IndexedSlices) and sorted(got[0].indices.numpy()) == [0, 3, 7] and got[1] is None
    got = [tf.convert_to_tensor(got[0]).numpy(), got[2].numpy()]
    if np.isnan(scale):
        assert np.isnan(got[0][[0, 3, 7]]).all() and np.isnan(got[1]).all()
        return
    want = keras_clip([tf.convert_to_tensor(rows), None, dense], 1.0)
    for a, b in zip(got, (want[0], want[2])):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-6, atol=1e-7)
    norm = np.sqrt(sum(np.sum(np.square(t)) for t in got))
    assert np.isclose(norm, 1.0) if scale > 1 else norm < 0.1


@pytest.mark.slow
def test_adamw_builds_its_step_scalars_once_not_for_each_variable():
    """The β powers, learning rate and weight-decay factor are built once per step: the first step
    traces a few ops per variable (clipping, decay, the fused kernel), where Keras' AdamW builds
    the schedule, casts and powers again for every variable (before: 1,291 ops here)."""
    import tensorflow as tf

    from keras_bert_lib.training.optimizers import NO_DECAY

    variables = bert_tiny().trainable_variables
    grads = [tf.zeros(v.shape) for v in variables]

    def traced_ops(optimizer):
        optimizer.build(variables)
        return len(tf.function(lambda g: optimizer.apply(g, variables)).get_concrete_function(grads).graph
                   .get_operations())

    theirs = keras.optimizers.AdamW(WarmupLinearDecay(1e-4, 10, 100), weight_decay=0.01, epsilon=1e-6,
                                    global_clipnorm=1.0)
    theirs.exclude_from_weight_decay(var_names=NO_DECAY)
    ours = traced_ops(create_optimizer("adamw", 1e-4, 10, 100))
    assert ours < 16 * len(variables) and ours < traced_ops(theirs) / 3, ours


def test_adamw_step_is_pytorchs_adamw():
    """One step of our AdamW (no decay on nothing, no clipping) against torch.optim.AdamW on the
    same weights and gradient: an independent reference of the formula."""
    import tensorflow as tf
    import torch

    from keras_bert_lib.training.optimizers import AdamW

    rng = np.random.default_rng(0)
    weights, grads = rng.normal(size=(3, 5, 7)).astype("float32"), rng.normal(size=(3, 5, 7)).astype("float32")
    ours = [keras.Variable(w) for w in weights]
    # Keras' epsilon sits outside the bias correction of v, torch's inside: a tiny epsilon takes
    # that difference (a few 1e-5 at eps 1e-6 after one step) out of the comparison
    optimizer = AdamW(learning_rate=1e-2, weight_decay=0.1, epsilon=1e-12)
    theirs = [torch.nn.Parameter(torch.tensor(w)) for w in weights]
    reference = torch.optim.AdamW(theirs, lr=1e-2, weight_decay=0.1, eps=1e-12)
    for _ in range(3):
        optimizer.apply([tf.constant(g) for g in grads], ours)
        for p, g in zip(theirs, grads):
            p.grad = torch.tensor(g)
        reference.step()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=1e-6)


def _batch(n=8):
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 50, (n, 10)).astype("int32"), "segment_ids": np.zeros((n, 10), "int32"),
         "padding_mask": np.ones((n, 10), "int32"), "masked_positions": rng.integers(1, 9, (n, 3)).astype("int32")}
    y = {"mlm_logits": rng.integers(5, 50, (n, 3)).astype("int32"), "nsp_logits": rng.integers(0, 2, n).astype("int32")}
    w = {"mlm_logits": np.ones((n, 3), "float32"), "nsp_logits": np.ones(n, "float32")}
    return x, y, w


@pytest.mark.slow
def test_pretrainer_trains_with_weighted_mlm_loss_under_xla():
    model = BertPretrainer(bert_tiny(num_hidden_layers=1, vocab_size=50))
    model.compile(optimizer=create_optimizer(warmup_steps=1, total_steps=50, peak_learning_rate=1e-3),
                  jit_compile=True)
    x, y, w = _batch()
    first = model.train_on_batch(x, y, w, return_dict=True)
    for _ in range(20):
        last = model.train_on_batch(x, y, w, return_dict=True)
    assert last["loss"] < first["loss"]
    # A zero weight removes a prediction from the loss entirely.
    w0 = {**w, "mlm_logits": np.concatenate([np.ones((8, 1)), np.zeros((8, 2))], 1).astype("float32")}
    y_noise = {**y, "mlm_logits": np.concatenate([y["mlm_logits"][:, :1], np.full((8, 2), 7)], 1).astype("int32")}
    a = model.test_on_batch(x, y, {**w0}, return_dict=True)["mlm_logits_loss"]
    b = model.test_on_batch(x, y_noise, w0, return_dict=True)["mlm_logits_loss"]
    assert abs(a - b) < 1e-5


@pytest.mark.slow
def test_a_nan_loss_stops_training_and_keeps_the_last_backup(tmp_path):
    # Eager steps: this is about callbacks, and tracing a step would take longer than the 27 steps.
    model = BertPretrainer(bert_tiny(num_hidden_layers=1, vocab_size=50))
    model.compile(optimizer=create_optimizer(warmup_steps=1, total_steps=50), run_eagerly=True)
    x, y, w = _batch()

    class PoisonAfter(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if self.model.optimizer.iterations.numpy() == 6:
                self.model.get_layer("nsp_head").dense.bias.assign([np.nan, np.nan])

    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"), save_freq=5, delete_checkpoint=False)
    with pytest.raises(FloatingPointError, match="The loss became nan at step 7"):
        model.fit(x, y, sample_weight=w, batch_size=8, epochs=20,
                  callbacks=[PoisonAfter(), StopOnNonFiniteLoss(), backup], verbose=0)
    restored = BertPretrainer(bert_tiny(num_hidden_layers=1, vocab_size=50))
    restored.compile(optimizer=create_optimizer(warmup_steps=1, total_steps=50), run_eagerly=True)
    restored.fit(x, y, sample_weight=w, batch_size=8, epochs=1, verbose=0,
                 callbacks=[keras.callbacks.BackupAndRestore(str(tmp_path / "backup"), save_freq=5)])
    assert np.isfinite(restored.get_layer("nsp_head").dense.bias.numpy()).all()


@pytest.mark.slow
def test_periodic_checkpoints_keep_the_newest_and_restore_model_and_optimizer(tmp_path):
    import tensorflow as tf

    from keras_bert_lib.training import PeriodicCheckpoints

    def compiled():  # eager steps: this is about checkpoints, and tracing would take longer than the steps
        model = BertPretrainer(bert_tiny(num_hidden_layers=1, vocab_size=50))
        model.compile(optimizer=create_optimizer(warmup_steps=1, total_steps=50), run_eagerly=True)
        return model

    model, (x, y, w), kernels = compiled(), _batch(8), {}

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            kernels[int(self.model.optimizer.iterations.numpy())] = self.model.get_layer(
                "nsp_head"
            ).dense.kernel.numpy()

    model.fit(x, y, sample_weight=w, batch_size=2, epochs=2, verbose=0,  # 8 steps, and a 9th below
              callbacks=[Record(), PeriodicCheckpoints(str(tmp_path), every_steps=3, max_to_keep=2)])
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), max_to_keep=2)
    assert [p.rsplit("-", 1)[1] for p in manager.checkpoints] == ["6", "8"]  # 3 deleted; 8 at the end
    restored = compiled()
    restored.train_on_batch(x, y, w)  # builds the optimizer's slots
    tf.train.Checkpoint(model=restored, optimizer=restored.optimizer).restore(manager.checkpoints[0]).assert_consumed()
    np.testing.assert_array_equal(restored.get_layer("nsp_head").dense.kernel.numpy(), kernels[6])
    assert int(restored.optimizer.iterations.numpy()) == 6


def test_a_ctrl_c_python_swallowed_in_a_destructor_still_stops_training_at_the_batch_end():
    """A KeyboardInterrupt raised inside `__del__` (or a garbage-collector callback, where a
    signal handler can land) is only printed by Python; inside KeepInterrupts it stops `fit`."""
    from keras_bert_lib.training.callbacks import KeepInterrupts

    class RaisesWhenDeleted:
        def __del__(self):
            raise KeyboardInterrupt

    class InterruptAtBatch(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def on_train_batch_begin(self, batch, logs=None):
            self.batches += 1
            if batch == 2:
                RaisesWhenDeleted()  # deleted at once: Python swallows the interrupt

    def fit(callbacks):
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        model.compile(loss="mse")
        model.fit(np.ones((10, 1)), np.ones((10, 1)), batch_size=1, epochs=1, callbacks=callbacks, verbose=0)

    seen = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        counter = InterruptAtBatch()
        fit([counter])  # without it the interrupt is lost: all 10 batches run
        assert counter.batches == 10 and len(seen) == 1
        counter, keep = InterruptAtBatch(), KeepInterrupts()
        with pytest.raises(KeyboardInterrupt), keep:
            fit([keep, counter])
        assert counter.batches == 3 and len(seen) == 1  # stopped at batch 2's end, nothing printed
    finally:
        sys.unraisablehook = previous_hook
    assert sys.unraisablehook is previous_hook


@pytest.mark.slow
def test_keep_interrupts_stops_at_the_batch_end_or_at_once_and_never_loses_a_ctrl_c():
    """SIGINT (a terminal's Ctrl-C) sets a flag that the next batch end raises, so no interrupt
    can be lost in a destructor or half-way through a checkpoint; with `at_once=True` it raises
    where it lands, and the flag still stops the run if that one was swallowed; the handler is put
    back after.
    Real signals, so in a process of its own (tests/training/ctrl_c_run.py says why)."""
    import json
    import os
    import subprocess

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctrl_c_run.py")
    done = subprocess.run([sys.executable, "-X", "faulthandler", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
                                            "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-4000:]}"
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # once: batch 2 runs to its end (3 ended); twice, or once with at_once: raised in batch 2's begin
    # (2 ended); at_once but swallowed where it landed: raised at batch 2's end (3 ended); caught and
    # turned into a TypeError in batch 2's begin: KeyboardInterrupt all the same (2 ended)
    runs = [(r["presses"], r["at_once"], r["swallowed"], r["mangled"], r["ended"], r["raised"], r["handler_put_back"])
            for r in runs]
    assert runs == [(1, False, False, False, 3, True, True), (2, False, False, False, 2, True, True),
                    (1, True, False, False, 2, True, True), (1, True, True, False, 3, True, True),
                    (1, True, False, True, 2, True, True)], done.stdout
