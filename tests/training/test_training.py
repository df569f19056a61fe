"""Optimizers, schedule and the NaN guard."""

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
