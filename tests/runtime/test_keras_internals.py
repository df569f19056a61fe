"""Every private name of Keras, TensorFlow and KServe the library relies on, and where: each is
looked up in the installed version, so an upgrade that renames or removes one fails here, by
name, before the behaviour built on it breaks somewhere else."""

import ast
import importlib
import inspect
import pathlib

import keras
import numpy as np
import pytest

# (object to look in, private name, what keras_internals.py uses it for)
BASE, TRAINER = "keras.src.optimizers.base_optimizer.BaseOptimizer", "keras.src.trainers.trainer.Trainer"
REST = "kserve.protocol.rest.server.RESTServer"
INTERNALS = [
    (TRAINER, "_resolve_auto_jit_compile", "jit_compile='auto' resolved by the runtime's rule"),
    (TRAINER, "_compute_loss", "a held-out batch's loss, Keras' own, outside its test step"),
    ("keras.src.backend.tensorflow.trainer.TensorFlowTrainer", "_maybe_symbolic_build",
     "the optimizer's slots built before the first step is traced"),
    (TRAINER, "_symbolic_build", "the same, under a distribution strategy"),
    (BASE, "_clip_gradients", "global-norm clipping of the sum over replicas"),
    (BASE, "_backend_update_step", "AdamW's step scalars built once per step"),
    (BASE, "_apply_weight_decay", "decoupled weight decay in the fused step"),
    (BASE, "_get_variable_index", "a variable's Adam moments"),
    (BASE, "_use_weight_decay", "which variables decay"),
    ("keras.src.backend.tensorflow.optimizer.TFOptimizer", "_all_reduce_sum_gradients",
     "the all-reduce done once, in _clip_gradients"),
    ("tensorflow.python.util._pywrap_util_port", "IsMklEnabled", "whether oneDNN's CPU kernels are on"),
    ("keras.src.trainers.data_adapters.array_data_adapter.ArrayDataAdapter", "get_tf_dataset",
     "arrays reach Keras' loops with tf.data's autotuning off"),
]
# KServe's, used by serve/routes.py (the server's own module), not by the models
KSERVE = [
    (REST, "_add_middlewares", "the connection limits before the application"),
    (REST, "_add_exception_handlers", "4xx answers with one line, never a traceback"),
]
# Attributes set in Keras' own code rather than defined on a class (test below)
INSTANCE = {"_loss_tracker", "_distribute_strategy", "_eval_epoch_iterator", "_use_cached_eval_dataset",
            "_convert_input_args", "_allow_non_tensor_positional_args", "_momentums", "_velocities",
            "_in_multi_worker_mode", "_inbound_nodes"}
PRIVATE_MODULES = ("keras.src", "tensorflow.python")
LIBRARY = pathlib.Path(__file__).resolve().parents[2] / "keras_bert_lib"


def _resolve(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("owner, name, why", INTERNALS + KSERVE,
                         ids=[f"{o.split('.')[-1]}.{n}" for o, n, _ in INTERNALS + KSERVE])
def test_a_private_name_we_rely_on_is_still_there(owner, name, why):
    if owner.startswith("kserve"):
        pytest.importorskip("kserve", reason="the serve extra, installed by the test command")
    assert hasattr(_resolve(owner), name), f"{owner}.{name} is gone from this version ({why}; keras_internals.py)"


def test_only_keras_internals_touches_them():
    """No other module reads, sets or overrides a private name of Keras or TensorFlow, or imports
    from `keras.src` or `tensorflow.python`: keras_internals.py is the one file to read against
    a new release. A planted use is found (the walk is not vacuous)."""
    private = {name for _, name, _ in INTERNALS} | INSTANCE

    def uses(source):
        found = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(node.attr)
            elif isinstance(node, ast.FunctionDef) and node.name in private:
                found.append(f"def {node.name}")
            elif isinstance(node, ast.Constant) and node.value in private:
                found.append(repr(node.value))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PRIVATE_MODULES):
                found.append(node.module)
        return found

    assert uses("class A:\n    def _clip_gradients(self): self._loss_tracker = 1\n") == ["def _clip_gradients",
                                                                                          "_loss_tracker"]
    where = {str(path.relative_to(LIBRARY)): uses(path.read_text()) for path in sorted(LIBRARY.rglob("*.py"))
             if path.name != "keras_internals.py"}
    assert not {k: v for k, v in where.items() if v}, "private Keras/TensorFlow names outside keras_internals.py"
    assert uses((LIBRARY / "keras_internals.py").read_text())


def test_the_instance_attributes_we_read_are_set_by_keras():
    """Attributes set in Keras' own code rather than defined on a class (keras_internals.py): a
    compiled model's loss tracker and strategy slot, fit's cached held-out iterator, a layer's
    switches for non-tensor arguments, a layer's calls in functional graphs, an optimizer's moments,
    a strategy's multi-worker test."""
    from keras.src.backend.tensorflow import trainer
    from keras.src.layers import layer

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    assert hasattr(model, "_loss_tracker") and hasattr(model, "_distribute_strategy")
    assert "_eval_epoch_iterator" in inspect.getsource(trainer.TensorFlowTrainer.fit)
    assert "_use_cached_eval_dataset" in inspect.getsource(trainer.TensorFlowTrainer.evaluate)
    dense = keras.layers.Dense(1)
    dense(keras.Input((2,)))
    assert len(dense._inbound_nodes) == 1  # graph_after: a layer's calls in functional graphs
    source = inspect.getsource(layer.Layer)
    assert "_convert_input_args" in source and "_allow_non_tensor_positional_args" in source
    optimizer = keras.optimizers.AdamW()
    optimizer.build([keras.Variable([1.0])])
    assert hasattr(optimizer, "_momentums") and hasattr(optimizer, "_velocities")
    import tensorflow as tf

    assert hasattr(tf.distribute.MirroredStrategy().extended, "_in_multi_worker_mode")


def test_set_untracked_leaves_a_plain_list_where_keras_would_wrap_and_visit_it():
    """A vocabulary set through `set_untracked` is the list itself; a layer's own assignment
    copies it into Keras' tracked list (the cost it avoids)."""
    from keras_bert_lib.keras_internals import set_untracked

    layer, tokens = keras.layers.Layer(), ["[PAD]", "[UNK]"]
    layer.tracked = tokens
    set_untracked(layer, tokens=tokens)
    assert layer.tokens is tokens and type(layer.tracked) is not list and layer.tracked == tokens


def test_keras_array_dataset_has_autotuning_off_while_open_and_gives_keras_own_batches():
    """Inside `arrays_without_autotune` (nested too) the dataset Keras makes of arrays has
    tf.data's autotuning off and yields the batches Keras' own gives, shuffled by the same seed;
    when the outermost use closes, Keras' method is back."""
    from keras.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter

    from keras_bert_lib.keras_internals import arrays_without_autotune

    keras_own, x = ArrayDataAdapter.get_tf_dataset, np.arange(14.0).reshape(7, 2)

    def batches():
        keras.utils.set_random_seed(0)
        data = ArrayDataAdapter(x, batch_size=2, shuffle=True).get_tf_dataset()
        return data.options().autotune.enabled, [b.numpy().tolist() for b in data]

    autotuned, keras_batches = batches()
    with arrays_without_autotune():
        with arrays_without_autotune():
            assert batches() == (False, keras_batches)
        assert ArrayDataAdapter.get_tf_dataset is not keras_own  # the outer use is still open
    assert ArrayDataAdapter.get_tf_dataset is keras_own and autotuned is not False
    assert len(keras_batches) == 4 and sorted(sum(keras_batches, [])) == x.tolist()


@pytest.mark.slow
def test_fit_evaluate_and_predict_take_arrays_to_keras_loops_with_autotuning_off():
    """A task model's `fit` (its held-out pass too), and `evaluate` and `predict` on Keras' own
    loop (steps, callbacks), run while `arrays_without_autotune` is open, and only then."""
    from keras.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter

    from keras_bert_lib import TextClassifier, bert_tiny

    seen = []

    class Sees(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(("fit", getattr(ArrayDataAdapter.get_tf_dataset, "without_autotune", False)))

        def on_test_begin(self, logs=None):
            seen.append(("evaluate", getattr(ArrayDataAdapter.get_tf_dataset, "without_autotune", False)))

        def on_predict_begin(self, logs=None):
            seen.append(("predict", getattr(ArrayDataAdapter.get_tf_dataset, "without_autotune", False)))

    ids = np.random.default_rng(0).integers(5, 100, (8, 6)).astype("int32")
    x, y = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}, np.arange(8) % 2
    model = TextClassifier(bert_tiny(vocab_size=100, num_hidden_layers=1), num_classes=2)
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x, y), callbacks=[Sees()], verbose=0)
    model.evaluate(x, y, batch_size=4, steps=2, callbacks=[Sees()], verbose=0)
    model.predict(x, batch_size=4, callbacks=[Sees()], verbose=0)
    assert seen == [("fit", True), ("evaluate", True), ("fit", True), ("evaluate", True),
                    ("evaluate", True), ("predict", True)]
    assert not hasattr(ArrayDataAdapter.get_tf_dataset, "without_autotune")
