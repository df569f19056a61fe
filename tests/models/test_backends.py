"""The encoders and every kind of head give TensorFlow's outputs on Keras' JAX and PyTorch
backends: the same weights (a .weights.h5 file) and inputs; TensorFlow in this process, JAX and
PyTorch each in a fresh one (Keras' backend is chosen once per process), both at once."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.backend_env import backend_env

pytest.importorskip("jax", reason="jax (CPU) is in the [test] extra")
pytest.importorskip("torch", reason="torch (CPU) is in the [test] extra")
pytestmark = pytest.mark.xdist_group("backends")  # both tests read one module fixture

# Builds the models, loads the weights if they exist (else saves them), runs fixed inputs and
# saves every output. It must not import TensorFlow on JAX or PyTorch.
SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import keras
    import keras_bert_lib as kb
    from keras_bert_lib import heads

    backend = keras.backend.backend()
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
    # ModernBERT with a window of 2 positions either side, so its local layers' blocks matter on 8
    # tokens (JAX and PyTorch fuse its attention, blocks folded into the batch; TensorFlow's is plain);
    # DeBERTa-v3 with 4 relative buckets each way reaching 8, so 8 tokens meet its log buckets.
    models = {"bert_tiny": kb.bert_tiny, "albert_base": kb.albert_base,
              "distilbert_base": lambda: kb.distilbert_base(num_hidden_layers=2), "heads": with_heads,
              "modernbert": lambda: kb.modernbert_base(vocab_size=1000, hidden_size=32, num_hidden_layers=3,
                                                       num_attention_heads=2, intermediate_size=48, local_attention=4),
              "deberta": lambda: kb.models.deberta_v3_base(vocab_size=1000, hidden_size=32, num_hidden_layers=2,
                                                           num_attention_heads=2, intermediate_size=48,
                                                           position_buckets=4, max_relative_positions=8)}

    def attention_outputs():
        # MultiHeadSelfAttention fused (keras.ops.dot_product_attention) and plain, with and
        # without padding, from seeded weights: every backend's pair against TensorFlow's plain.
        from keras_bert_lib.layers import MultiHeadSelfAttention
        x = rng.normal(size=(2, 7, 16)).astype("float32")
        weights = [rng.normal(0, 0.3, (16, 16) if i % 2 == 0 else (16,)).astype("float32") for i in range(8)]
        results = {}
        for implementation in ("fused", "plain"):
            layer = MultiHeadSelfAttention(num_heads=4, implementation=implementation)
            layer.build(x.shape)
            layer.set_weights(weights)
            for name, mask in (("padded", feed["padding_mask"][:, :7]), ("full", None)):
                out = layer(x, padding_mask=mask)
                results[f"attention/{implementation}/{name}"] = np.asarray(keras.ops.convert_to_numpy(out))
        return results

    def outputs(folder):
        # Every output, keyed model/output[/part]; loads the weights if they exist, else saves them.
        results = {}
        for name, build in models.items():
            model = build()
            path = os.path.join(folder, name + ".weights.h5")
            if os.path.exists(path):
                model.load_weights(path)
            else:
                model.save_weights(path)
            x = {**feed, "masked_positions": np.array([[1, 3], [2, 4]], "int32")} if name == "heads" else feed
            # TensorFlow's reference runs the plain graph (its XLA path is tested elsewhere);
            # JAX's and PyTorch's run predict_on_batch, compiled as each backend compiles.
            out = model(x, training=False) if backend == "tensorflow" else model.predict_on_batch(x)
            if name == "bert_tiny":  # the device fast path: one compiled program, outputs left as backend tensors
                from keras_bert_lib.runtime.compile_path import compiled_call
                fast = compiled_call(model)(x)["pooled_output"]
                assert not isinstance(fast, np.ndarray), type(fast)
                results["bert_tiny/compiled_call/pooled_output"] = np.asarray(keras.ops.convert_to_numpy(fast))
            for key, value in out.items():
                parts = value.items() if isinstance(value, dict) else [("", value)]
                for part, array in parts:
                    value = np.asarray(keras.ops.convert_to_numpy(array), "float32")
                    results[f"{name}/{key}{'/' + part if part else ''}"] = value
        return {**results, **attention_outputs()}

    if __name__ == "__main__":  # a fresh process on another backend
        np.savez(os.path.join(sys.argv[1], backend + ".npz"), **outputs(sys.argv[1]))
        assert "tensorflow" not in sys.modules, "TensorFlow was imported"
        # The packages that build TensorFlow graphs also run on JAX (tf.data feeds it), and on
        # PyTorch say what they need.
        for package in ("finetuning", "export", "text", "data", "training", "runs"):
            try:
                __import__("keras_bert_lib." + package)
            except ImportError as e:
                assert "needs Keras' TensorFlow backend" in str(e) and "KERAS_BACKEND=tensorflow" in str(e), e
                assert backend == "torch", e
            else:
                assert backend == "jax", f"{package} imported on {backend}"
""")


def _start(backend, folder):
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=backend_env(backend), cwd=folder)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("backends")
    namespace = {"__name__": "tensorflow_reference"}
    exec(SCRIPT, namespace)  # this process is on TensorFlow
    reference = namespace["outputs"](str(folder))  # writes the weights the others load
    others = {}
    for backend, process in [(b, _start(b, folder)) for b in ("jax", "torch")]:
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{backend}:\n{stderr[-3000:]}"
        others[backend] = dict(np.load(folder / f"{backend}.npz"))
    return reference, others


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_output_equals_tensorflows(outputs, backend):
    reference, others = outputs
    got = others[backend]
    assert (
        set(got) == set(reference) and len(reference) == 2 + 2 + 1 + 7 + 1 + 1 + 4 + 1
    )  # bert, albert, distilbert, heads (span: start and end), modernbert, deberta, attention fused and plain,
    # compiled_call
    for key, want in reference.items():
        diff = float(np.max(np.abs(got[key] - want)))
        assert diff <= 1e-5, f"{backend} {key}: max |diff| {diff:.2e} > 1e-5"


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_fused_attention_equals_plain(outputs, backend):
    """keras.ops.dot_product_attention (cuDNN/SDPA where there are GPUs, XLA's math here) gives
    the plain softmax(QKᵀ/√d)V of TensorFlow, padded keys masked, on every backend."""
    reference, others = outputs
    got = reference if backend == "tensorflow" else others[backend]
    for name in ("padded", "full"):
        fused, plain = got[f"attention/fused/{name}"], reference[f"attention/plain/{name}"]
        diff = float(np.max(np.abs(fused - plain)))
        assert diff <= 1e-5, f"{backend} {name}: fused differs from plain by {diff:.2e}"
    # the padding changed something (the mask reached the fused op)
    assert float(np.max(np.abs(got["attention/fused/padded"] - got["attention/fused/full"]))) > 1e-3
