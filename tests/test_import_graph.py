"""The package's imports run one way: no cycle, no upward import, no import of the root, and the
layers, heads and models never import TensorFlow. Read from the source with `ast`, every import
counted, at module level or inside a function."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "keras_bert_lib"

# Lowest first. A module may import modules of its own rank or below, never above. The order is
# the one docs/design.md draws.
RANKS = {
    "atomic_write": 0, "backend_check": 0, "file_checks": 0, "output_lock": 0, "progress": 0, "config": 0,
    "keras_internals": 0,
    "layers": 0, "metrics": 0, "runtime": 0, "encoder_families": 0, "modernbert": 0, "deberta": 0,
    "heads": 1,
    "checkpoints": 2, "pretraining": 2,
    "text": 3,
    "models": 4,
    "data": 5,
    "training": 6,
    "distillation": 7,
    "tasks": 8,
    "finetuning": 9, "export": 9, "viz": 9,
    "runs": 10, "corpus": 10, "serve": 10, "beam": 11,
    "cli": 11,
}
KERAS_ONLY = ("layers", "heads", "models", "modernbert", "deberta", "pretraining", "distillation", "tasks", "runtime",
              "keras_internals")
# Functions that are TensorFlow-only branches of backend-neutral code, importing it when they run:
# checking a tf.data.Dataset a user passes to fit, inside that dataset's own pipeline (a
# tf.data.Dataset means TensorFlow is there), the dense product written in the form oneDNN fuses,
# the traced weights fingerprint, a held-out pass's forward and update functions and predict's
# forward pass traced once (all called on the TensorFlow backend only), the runtime's questions to
# TensorFlow about the machine, and the TensorFlow trainer's and optimizer's internals
# (keras_internals: TensorFlow's code paths only), and the traces OpenVINO's TensorFlow front end
# converts, padded and packed (the openvino runtimes need TensorFlow).
TF_DATASET_CHECK = {("keras_bert_lib.runtime.input_checks", "checked_dataset"),
                    ("keras_bert_lib.runtime.openvino", "traced"),
                    ("keras_bert_lib.runtime.packing", "packed_function"),
                    ("keras_bert_lib.layers.bias_activation_dense", "call"),
                    ("keras_bert_lib.runtime.dtype_copy", "_tf_fingerprint"),
                    ("keras_bert_lib.runtime.evaluate_in_flight", "_start"),
                    ("keras_bert_lib.runtime.evaluate_in_flight", "_step_functions"),
                    ("keras_bert_lib.keras_internals", "build_before_first_trace"),
                    ("keras_bert_lib.keras_internals", "in_multi_worker_mode"),
                    ("keras_bert_lib.keras_internals", "_clip_gradients"),
                    ("keras_bert_lib.keras_internals", "clip_by_global_norm"),
                    ("keras_bert_lib.keras_internals", "_fused"),
                    ("keras_bert_lib.keras_internals", "_backend_update_step"),
                    ("keras_bert_lib.keras_internals", "update_step"),
                    ("keras_bert_lib.keras_internals", "_apply_weight_decay"),
                    ("keras_bert_lib.keras_internals", "onednn_enabled"),
                    ("keras_bert_lib.keras_internals", "arrays_without_autotune"),
                    ("keras_bert_lib.runtime.compile_path", "accelerator_has_bfloat16"),
                    ("keras_bert_lib.runtime.compile_path", "compiled_call"),
                    ("keras_bert_lib.runtime.compile_path", "inference_function"),
                    ("keras_bert_lib.runtime.compile_path", "any_shape")}


def _module_name(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """(imported module, line) for every import of keras_bert_lib.* and of tensorflow in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            # `from keras_bert_lib.text import normalizer` imports a module too.
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names
                      if ROOT.parent.joinpath(*f"{node.module}.{a.name}".split(".")).with_suffix(".py").exists()]
    return found


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
GRAPH = {name: [(m, line) for m, line in _imports(path) if m.startswith("keras_bert_lib")]
         for name, path in MODULES.items()}


def _package(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the root itself


def test_every_package_has_a_rank():
    assert {_package(m) for m in MODULES} - {None} <= set(RANKS), "a new package needs a place in RANKS"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "keras_bert_lib"))
def test_no_upward_import_and_never_the_root(module):
    own = RANKS[_package(module)]
    for imported, line in GRAPH[module]:
        if imported == "keras_bert_lib":
            raise AssertionError(f"{module}:{line} imports the package root; import the module that defines the name")
        target = _package(imported)
        assert RANKS[target] <= own, (f"{module}:{line} imports {imported}: {target} (rank {RANKS[target]}) "
                                      f"sits above {_package(module)} (rank {own})")


def test_no_import_cycle():
    edges = {m: {i for i, _ in GRAPH[m] if i in MODULES and i != m} for m in MODULES}
    # A package's __init__ re-exports its modules: an edge from a module to its own package's
    # __init__ (or back) is not a cycle between modules, so only edges into a *module* count.
    edges = {m: {i for i in targets if not (MODULES[i].name == "__init__.py" and m.startswith(i + "."))}
             for m, targets in edges.items()}
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = "done"

    for module in sorted(MODULES):
        if module not in state:
            visit(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _package(m) in KERAS_ONLY))
def test_layers_heads_and_models_never_import_tensorflow(module):
    """They use keras and keras.ops only, so that they run on the JAX and PyTorch backends."""
    tree = ast.parse(MODULES[module].read_text())
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (module, node.name) in TF_DATASET_CHECK:
            allowed |= {n.lineno for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    tf = [f"{module}:{line} imports {m}" for m, line in _imports(MODULES[module])
          if m.split(".")[0] in ("tensorflow", "tensorflow_text") and line not in allowed]
    assert not tf, "; ".join(tf)


def test_the_checker_sees_a_planted_upward_import(tmp_path, monkeypatch):
    """The walk is not vacuous: an import of training from layers is found."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from keras_bert_lib.training import create_optimizer\n")
    assert ("keras_bert_lib.training", 2) in _imports(planted)


def _private_imports(path):
    """(module, name, line) of every `from keras_bert_lib.x import _name` in a file."""
    return [(node.module, alias.name, node.lineno) for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras_bert_lib")
            for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]


def test_no_module_imports_another_modules_private_name():
    found = [f"{name}:{line} imports {imported}.{private}"
             for name, path in MODULES.items() for imported, private, line in _private_imports(path)
             if imported != name]
    assert not found, found


def test_the_private_import_check_sees_one(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from keras_bert_lib.runs.finetune import _save, save_run_model\n")
    assert _private_imports(path) == [("keras_bert_lib.runs.finetune", "_save", 1)]
