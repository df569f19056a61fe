"""The encoders and every kind of head give TensorFlow's outputs on Keras' JAX and PyTorch
backends: each backend in a fresh process, the same weights (a .weights.h5 file) and inputs."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("jax", reason="jax (CPU) is in the [test] extra")
pytest.importorskip("torch", reason="torch (CPU) is in the [test] extra")

# Builds the models, loads the weights if they exist (else saves them), runs fixed inputs and
# saves every output. It must not import TensorFlow on JAX or PyTorch.
SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import keras
    import keras_bert_lib as kb
    from keras_bert_lib import heads

    folder, backend = sys.argv[1], keras.backend.backend()
    # (no keras.utils.set_random_seed: it imports TensorFlow where it is installed; the weights
    # come from one file anyway)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, (2, 8)).astype("int32")
    feed = {"token_ids": ids, "segment_ids": np.array([[0] * 4 + [1] * 4, [0] * 8], "int32"),
            "padding_mask": np.array([[1] * 8, [1] * 5 + [0] * 3], "int32")}

    def with_heads():
        encoder = kb.bert_tiny()
        inputs = {**encoder.input, "masked_positions": keras.Input((None,), dtype="int32", name="masked_positions")}
        out = encoder({k: inputs[k] for k in encoder.input})
        seq, pooled, mask = out["sequence_output"], out["pooled_output"], inputs["padding_mask"]
        outputs = {
            "classification": heads.ClassificationHead(3, name="classification")(pooled),
            "masked_lm": heads.MaskedLMHead(encoder.token_embedding, name="mlm")(seq, inputs["masked_positions"]),
            "pooling": heads.Pooling("mean", normalize=True, name="pooling")(seq, padding_mask=mask),
            "sentence_pair": heads.SentencePairHead(name="nsp")(pooled),
            "span": heads.SpanHead(name="span")(seq, padding_mask=mask),
            "token_classification": heads.TokenClassificationHead(5, name="tags")(seq),
        }
        return keras.Model(inputs, outputs)

    # DistilBERT-Base's shape with two of its six layers: the layers are alike, and its 66M
    # weights would be written once and read twice.
    models = {"bert_tiny": kb.bert_tiny, "albert_base": kb.albert_base,
              "distilbert_base": lambda: kb.distilbert_base(num_hidden_layers=2), "heads": with_heads}
    results = {}
    for name, build in models.items():
        model = build()
        path = os.path.join(folder, name + ".weights.h5")
        if os.path.exists(path):
            model.load_weights(path)
        else:
            model.save_weights(path)
        x = {**feed, "masked_positions": np.array([[1, 3], [2, 4]], "int32")} if name == "heads" else feed
        for key, value in model.predict_on_batch(x).items():
            parts = value.items() if isinstance(value, dict) else [("", value)]
            for part, array in parts:
                results[f"{name}/{key}{'/' + part if part else ''}"] = np.asarray(keras.ops.convert_to_numpy(array), "float32")
    np.savez(os.path.join(folder, backend + ".npz"), **results)
    assert backend == "tensorflow" or "tensorflow" not in sys.modules, "TensorFlow was imported"
    if backend != "tensorflow":  # the TensorFlow-only packages say what they need
        for package in ("text", "data", "training", "runs"):
            try:
                __import__("keras_bert_lib." + package)
            except ImportError as e:
                assert "needs Keras' TensorFlow backend" in str(e) and "KERAS_BACKEND=tensorflow" in str(e), e
            else:
                raise AssertionError(f"keras_bert_lib.{package} imported on {backend}")
""")


def _run(backend, folder):
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "JAX_PLATFORMS": "cpu",
           "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(folder)], capture_output=True, text=True,
                            env=env, timeout=600, cwd=folder)
    assert result.returncode == 0, f"{backend}:\n{result.stderr[-3000:]}"
    return dict(np.load(folder / f"{backend}.npz"))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("backends")
    reference = _run("tensorflow", folder)  # writes the weights the others load
    return reference, {b: _run(b, folder) for b in ("jax", "torch")}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_output_equals_tensorflows(outputs, backend):
    reference, others = outputs
    got = others[backend]
    assert set(got) == set(reference) and len(reference) == 2 + 2 + 1 + 7  # bert, albert, distilbert, heads (span: start and end)
    for key, want in reference.items():
        diff = float(np.max(np.abs(got[key] - want)))
        assert diff <= 1e-5, f"{backend} {key}: max |diff| {diff:.2e} > 1e-5"
