"""The public surface: registration, a harness spec per class, docstrings whose examples run."""

import ast
import importlib
import inspect
import pathlib
import pkgutil
import re

import keras
import pytest

import keras_bert_lib
from keras_bert_lib import (
    checkpoints,
    data,
    deberta,
    distillation,
    export,
    heads,
    layers,
    metrics,
    models,
    modernbert,
    pretraining,
    runs,
    runtime,
    tasks,
    text,
    training,
    viz,
)
from tests.examples import run_example

CLASSES = [getattr(m, n) for m in (layers, heads, models, modernbert, deberta) for n in m.__all__
           if inspect.isclass(getattr(m, n)) and issubclass(getattr(m, n), keras.layers.Layer)]  # not the configs


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_class_is_registered_under_the_package(cls):
    assert keras.saving.get_registered_name(cls) == f"keras_bert_lib>{cls.__name__}"


@pytest.mark.slow
def test_importing_the_package_registers_every_serializable_class_it_defines():
    """`import keras_bert_lib` alone, in a fresh process, registers every class the source
    decorates (optimizers, schedules, losses, metrics, preprocessors too): a saved model that
    names any of them loads with keras.models.load_model."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(keras_bert_lib.__file__).parent
    decorated = r"@keras\.saving\.register_keras_serializable\(package=\"keras_bert_lib\"\)\s*\nclass (\w+)"
    names = sorted({m.group(1) for path in root.rglob("*.py") for m in re.finditer(decorated, path.read_text())})
    assert len(names) > 30
    done = subprocess.run([sys.executable, "-c", "import sys, keras, keras_bert_lib\n"
                           "print([n for n in sys.argv[1:]\n"
                           "       if keras.saving.get_registered_object('keras_bert_lib>' + n) is None])", *names],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", f"not registered by import keras_bert_lib: {done.stdout}"


@pytest.mark.parametrize("cls", [c for c in CLASSES if issubclass(c, keras.layers.Layer)], ids=lambda c: c.__name__)
def test_every_class_has_a_harness_spec(cls):
    """A new layer cannot skip the shared checks: some test module declares a spec for it."""
    import tests
    specs = []
    for info in pkgutil.walk_packages(tests.__path__, "tests."):
        if info.name.split(".")[-1].startswith("test_") and info.name != __name__:
            module = importlib.import_module(info.name)
            found = [v for k, v in vars(module).items() if k.endswith("SPEC") or k == "SPECS"]
            for v in found:
                specs += list(v.values()) if isinstance(v, dict) else [v]
    assert any(s.cls is cls for s in specs), f"no harness spec for {cls.__name__}"


def _public_objects():
    seen = {}
    for module in (keras_bert_lib, layers, heads, models, modernbert, deberta, tasks, pretraining, distillation,
                   runtime, checkpoints, text, data, training, runs, metrics, viz, export):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not isinstance(obj, tuple):
                seen[f"{obj.__module__}.{name}"] = obj
    import keras_bert_cli
    import keras_bert_commands
    from keras_bert_lib import atomic_write, backend_check, cli, file_checks, progress
    from keras_bert_lib.config import config_from_hf_json
    from keras_bert_lib.layers import activations, initializers, masks
    from keras_bert_lib.models import summary
    from keras_bert_lib.models.encoder import BertEncoder, encoder_class
    from keras_bert_lib.runtime import packing
    from keras_bert_lib.runtime.openvino_layer_norm import fuse_layer_norms
    from keras_bert_lib.text import normalizer, tf_text
    from keras_bert_lib.training import loop
    for fn in (activations.gelu, activations.gelu_tanh, activations.get_activation, initializers.truncated_normal,
               initializers.assigned_next,
               masks.merge_masks, masks.attention_bias, cli.main, atomic_write.atomic_write_text,
               backend_check.require_tensorflow_backend, normalizer.normalize,
               tf_text.import_tensorflow_text, loop.option, loop.cli_flag, loop.backup_epoch,
               file_checks.not_utf8_error, file_checks.open_text, file_checks.check_utf8,
               file_checks.check_writable_folder, file_checks.fingerprint, progress.progress_verbose,
               progress.progress_bar, keras_bert_commands.build_parser, keras_bert_cli.main,
               keras_bert_commands.add_config_flags, keras_bert_commands.positive, keras_bert_commands.non_negative,
               summary.summarize, config_from_hf_json, encoder_class, fuse_layer_norms, packing.pack,
               packing.packed_function, packing.can_pack, packing.check_row_tokens):
        seen[f"{fn.__module__}.{fn.__name__}"] = fn
    seen["keras_bert_lib.models.encoder.BertEncoder.call_packed"] = BertEncoder.call_packed
    return seen


PUBLIC = _public_objects()
EXAMPLE = re.compile(r"Example:\n\s*```python\n(.*?)```", re.S)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _documented_examples():
    """{module.qualname: its docstring's example blocks} for every function, class, method and
    property of the library and its command whose docstring has one, read from the source (so
    collecting imports nothing): public names and internal ones alike."""
    root = pathlib.Path(keras_bert_lib.__file__).parent
    found = {}
    for path in [*root.rglob("*.py"), root.parent / "keras_bert_cli.py", root.parent / "keras_bert_commands.py"]:
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            named = [(node.name, node)] if isinstance(node, DEFINITIONS) else []
            if isinstance(node, ast.ClassDef):
                named += [(f"{node.name}.{n.name}", n) for n in node.body if isinstance(n, DEFINITIONS)]
            for qualname, n in named:
                blocks = EXAMPLE.findall(ast.get_docstring(n) or "")
                if blocks:
                    found[f"{module}.{qualname}"] = blocks
    return found


EXAMPLES = _documented_examples()


def test_every_public_name_has_a_docstring_example():
    missing = [name for name, obj in PUBLIC.items() if f"{obj.__module__}.{obj.__qualname__}" not in EXAMPLES]
    assert not missing, f"no docstring Example with a python block: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_docstring_example_runs_and_states_its_outputs_truly(name):
    """Each example in the library's docstrings runs, and every output a line's comment states
    holds (tests/examples.py): internal names' examples as much as public ones'."""
    for block in EXAMPLES[name]:
        run_example(inspect.cleandoc(block), f"<{name} example>")


def test_package_root_is_short_and_explicit():
    assert len(keras_bert_lib.__all__) <= 30
    for name in keras_bert_lib.__all__:
        assert hasattr(keras_bert_lib, name), name
