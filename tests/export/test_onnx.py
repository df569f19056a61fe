"""export_onnx: BERT, ALBERT, DistilBERT and RoBERTa (exact and tanh GELU) run in ONNX Runtime
from one file at two batch sizes and two lengths within 1e-4 of Keras, as tf2onnx's graph and as
ONNX Runtime's fused one (Attention, GELU, SkipLayerNormalization counted); task outputs keep
their names; int8 stays close; a file is written only when ONNX Runtime agrees."""

import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import TextClassifier, TokenClassifier
from keras_bert_lib.export import export_onnx
from keras_bert_lib.export.signatures import task_outputs

pytest.importorskip("tf2onnx", reason="the export extra (tf2onnx, onnxruntime) is part of the test install")
ort = pytest.importorskip("onnxruntime")

SMALL = dict(vocab_size=120, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=64)


def _feed(session, batch, length, seed, segments):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[-1, length - 3:] = 0
    feed = {
        "token_ids": rng.integers(5, 120, (batch, length)).astype("int32") * mask,
        "segment_ids": (rng.integers(0, max(segments, 1), (batch, length)) * mask).astype("int32"),
        "padding_mask": mask,
    }
    used = {i.name for i in session.get_inputs()}
    return {k: v for k, v in feed.items() if k in used}, feed


def _perturbed(encoder, seed=0):
    """Random biases and LayerNorm γ/β: with Keras' zeros and ones a misplaced bias or a swapped
    γ/β in a rewritten graph would go unseen."""
    rng = np.random.default_rng(seed)
    for variable in encoder.weights:
        if variable.path.rsplit("/", 1)[-1] in ("bias", "gamma", "beta"):
            variable.assign(variable.numpy() + rng.normal(0, 0.2, variable.shape).astype("float32"))
    return encoder


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["bert_base", "albert_base", "distilbert_base", "roberta_base"])
def test_one_file_serves_two_batch_sizes_and_two_lengths_plain_and_fused(factory, tmp_path):
    encoder = _perturbed(getattr(kb, factory)(**SMALL))
    blocks = encoder.config.num_hidden_layers
    plain = export_onnx(encoder, tmp_path / "plain.onnx", optimize=False)
    fused = export_onnx(encoder, tmp_path / "fused.onnx")
    # Every LayerNorm is one ONNX operator; the optimiser fuses every block's attention, its
    # bias + GELU and both of its residual adds with their LayerNorms.
    assert plain["rewritten"]["LayerNormalization"] == 2 * blocks + 1 and plain["fused"] == {}
    assert fused["fused"]["Attention"] == blocks, fused["fused"]
    assert fused["fused"]["SkipLayerNormalization"] >= 2 * blocks, fused["fused"]
    assert sum(fused["fused"].get(k, 0) for k in ("Gelu", "BiasGelu", "FastGelu")) == blocks, fused["fused"]
    for path in ("plain.onnx", "fused.onnx"):
        session = ort.InferenceSession(str(tmp_path / path), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        for batch, length in ((1, 9), (4, 33)):
            feed, full = _feed(session, batch, length, seed=batch, segments=encoder.config.type_vocab_size)
            want = task_outputs(encoder, full)
            for name, got in zip(names, session.run(None, feed)):
                np.testing.assert_allclose(got, want[name].numpy(), atol=1e-4, rtol=0,
                                           err_msg=f"{factory} {path} {name}")


@pytest.mark.slow
def test_task_models_keep_their_output_names_and_the_optimised_and_int8_files_agree(tmp_path):
    classifier = TextClassifier(kb.bert_base(**SMALL), 3)
    optimized = export_onnx(classifier, tmp_path / "c.onnx")
    # The [CLS] classifier's last block queries with [CLS] alone, a form ONNX Runtime does not fuse:
    # one Attention for two blocks (the file is still faster: 5/6 of that block's products skipped).
    assert optimized["max_abs_diff"] <= 1e-4 and optimized["fused"]["Attention"] == 1
    session = ort.InferenceSession(str(tmp_path / "c.onnx"), providers=["CPUExecutionProvider"])
    assert sorted(o.name for o in session.get_outputs()) == ["label", "probabilities"]
    int8 = export_onnx(classifier, tmp_path / "c8.onnx", quantize="dynamic_int8")
    assert (tmp_path / "c8.onnx").stat().st_size < 0.6 * (tmp_path / "c.onnx").stat().st_size
    assert int8["max_abs_diff"] < 0.1
    tagger = TokenClassifier(kb.bert_base(**SMALL), ["O", "B-X", "I-X"])
    export_onnx(tagger, tmp_path / "t.onnx", optimize=False)
    session = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    assert sorted(o.name for o in session.get_outputs()) == ["logits", "tag_ids"]


def test_an_unknown_quantization_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="quantize='int4'"):
        export_onnx(kb.bert_tiny(num_hidden_layers=1), tmp_path / "m.onnx", quantize="int4")
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.slow
def test_the_optimiser_needs_no_pytorch_and_fuses_as_onnx_runtimes_own_entry_point(tmp_path, monkeypatch):
    """The export extra has no torch, and ONNX Runtime's optimize_model imports it for its first
    pass: ours asks a session for that pass, and makes the same fused graph without torch."""
    import onnx
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import AttentionMaskFormat, FusionOptions

    encoder = _perturbed(kb.bert_base(**SMALL))
    plain = export_onnx(encoder, tmp_path / "plain.onnx", optimize=False)["path"]
    with monkeypatch.context() as m:
        m.setitem(__import__("sys").modules, "torch", None)  # `import torch` raises, as where it is not installed
        with pytest.raises(ImportError):
            import torch  # noqa: F401
        ours = export_onnx(encoder, tmp_path / "ours.onnx")
    assert ours["fused"]["Attention"] == 2
    options = FusionOptions("bert")
    options.attention_mask_format = AttentionMaskFormat.AttentionMask
    theirs = optimizer.optimize_model(plain, model_type="bert", num_heads=4, hidden_size=64,
                                      optimization_options=options)  # imports torch: the test extra has it
    ours_graph = onnx.load(str(tmp_path / "ours.onnx")).graph
    assert [n.op_type for n in ours_graph.node] == [n.op_type for n in theirs.model.graph.node]
