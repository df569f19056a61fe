"""Every private name of Keras, TensorFlow and KServe the library relies on, and where: each is
looked up in the installed version, so an upgrade that renames or removes one fails here, by
name, before the behaviour built on it breaks somewhere else."""

import importlib
import inspect

import keras
import pytest

# (object to look in, private name, the library's module that relies on it, what for)
INTERNALS = [
    ("keras.src.trainers.trainer.Trainer", "_resolve_auto_jit_compile", "runtime/input_checks.py",
     "jit_compile='auto' resolved by the runtime's rule"),
    ("keras.src.trainers.trainer.Trainer", "_compute_loss", "runtime/evaluate_in_flight.py",
     "a held-out batch's loss, Keras' own, outside its test step"),
    ("keras.src.backend.tensorflow.trainer.TensorFlowTrainer", "_maybe_symbolic_build", "training/keras_mends.py",
     "the optimizer's slots built before the first step is traced"),
    ("keras.src.trainers.trainer.Trainer", "_symbolic_build", "training/keras_mends.py",
     "the same, under a distribution strategy"),
    ("keras.src.optimizers.base_optimizer.BaseOptimizer", "_clip_gradients", "training/optimizers.py",
     "global-norm clipping of the sum over replicas"),
    ("keras.src.optimizers.base_optimizer.BaseOptimizer", "_backend_update_step", "training/optimizers.py",
     "AdamW's step scalars built once per step"),
    ("keras.src.optimizers.base_optimizer.BaseOptimizer", "_apply_weight_decay", "training/optimizers.py",
     "decoupled weight decay in the fused step"),
    ("keras.src.backend.tensorflow.optimizer.TFOptimizer", "_all_reduce_sum_gradients", "training/optimizers.py",
     "the all-reduce done once, in _clip_gradients"),
    ("tensorflow.python.util._pywrap_util_port", "IsMklEnabled", "runtime/compile_path.py",
     "whether oneDNN's CPU kernels are on"),
    ("kserve.protocol.rest.server.RESTServer", "_add_middlewares", "serve/routes.py",
     "the connection limits before the application"),
    ("kserve.protocol.rest.server.RESTServer", "_add_exception_handlers", "serve/routes.py",
     "4xx answers with one line, never a traceback"),
]


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


@pytest.mark.parametrize("owner, name, user, why", INTERNALS,
                         ids=[f"{o.split('.')[-1]}.{n}" for o, n, _, _ in INTERNALS])
def test_a_private_name_we_rely_on_is_still_there(owner, name, user, why):
    if owner.startswith("kserve"):
        pytest.importorskip("kserve", reason="the serve extra, installed by the test command")
    assert hasattr(_resolve(owner), name), (
        f"{owner}.{name} is gone from this version ({why}; keras_bert_lib/{user} uses it)")


def test_the_instance_attributes_we_read_are_set_by_keras():
    """Attributes set in Keras' own code rather than defined on a class: a compiled model's loss
    tracker (runtime/evaluate_in_flight.py), its strategy slot (training/keras_mends.py) and fit's
    cached held-out iterator (tasks/task_model.py); a layer's switches for non-tensor arguments
    (text/packer.py, text/preprocessor.py, text/token_roles.py)."""
    from keras.src.backend.tensorflow import trainer
    from keras.src.layers import layer

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    assert hasattr(model, "_loss_tracker") and hasattr(model, "_distribute_strategy")
    assert "_eval_epoch_iterator" in inspect.getsource(trainer.TensorFlowTrainer.fit)
    assert "_use_cached_eval_dataset" in inspect.getsource(trainer.TensorFlowTrainer.evaluate)
    source = inspect.getsource(layer.Layer)
    assert "_convert_input_args" in source and "_allow_non_tensor_positional_args" in source
