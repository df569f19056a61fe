"""HuggingFace round trip: transformers → keras_bert_lib → transformers, outputs equal."""

import numpy as np
import pytest

from keras_bert_lib import load_checkpoint, save_checkpoint
from tests import harness

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

SMALL = dict(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=32, max_position_embeddings=20)
CASES = {
    "bert": lambda: transformers.BertForPreTraining(transformers.BertConfig(**SMALL, type_vocab_size=3)),
    "albert": lambda: transformers.AlbertForPreTraining(transformers.AlbertConfig(
        **SMALL, embedding_size=8, num_hidden_groups=1, inner_group_num=1, hidden_act="gelu_new")),
    "distilbert": lambda: transformers.DistilBertModel(transformers.DistilBertConfig(
        vocab_size=60, dim=16, n_layers=2, n_heads=2, hidden_dim=32, max_position_embeddings=20)),
    "roberta": lambda: transformers.RobertaModel(transformers.RobertaConfig(
        **{**SMALL, "max_position_embeddings": 22}, type_vocab_size=1, layer_norm_eps=1e-5)),
}
MASK = harness.right_padded([9, 6, 3])
POSITIONS = np.array([[1, 4, 8], [0, 2, 5], [1, 2, 2]], "int32")


def _randomised(name):
    torch.manual_seed(0)
    model = CASES[name]().eval()
    with torch.no_grad():
        for p in model.parameters():  # LayerNorm gains and biases too, so every tensor matters
            p.normal_(0.0, 0.3)
    return model


def _batch(name):
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 60, (3, 9)).astype("int32")
    ids[MASK == 0] = 1 if name == "roberta" else 0  # RoBERTa pads with id 1
    segments = (np.arange(9)[None] >= 5).repeat(3, 0).astype("int32") if name in ("bert", "albert") \
        else np.zeros((3, 9), "int32")
    return {"token_ids": ids, "segment_ids": segments * MASK, "padding_mask": MASK}


def _hf_outputs(model, batch):
    kwargs = {"input_ids": torch.from_numpy(batch["token_ids"].astype("int64")),
              "attention_mask": torch.from_numpy(batch["padding_mask"].astype("int64"))}
    if not isinstance(model, transformers.DistilBertModel):
        kwargs["token_type_ids"] = torch.from_numpy(batch["segment_ids"].astype("int64"))
    with torch.no_grad():
        out = model(**kwargs, output_hidden_states=True)
    result = {"sequence_output": out.hidden_states[-1].numpy()}
    if hasattr(out, "pooler_output") and out.pooler_output is not None:
        result["pooled_output"] = out.pooler_output.numpy()
    if hasattr(out, "prediction_logits"):
        logits = out.prediction_logits.numpy()
        result["mlm_logits"] = np.take_along_axis(logits, POSITIONS[:, :, None], axis=1)
        result["nsp_logits"] = (out.seq_relationship_logits if hasattr(out, "seq_relationship_logits")
                                else out.sop_logits).numpy()
    return result


def _our_outputs(model, batch):
    encoder = getattr(model, "encoder", model)
    result = dict(encoder.predict_on_batch(batch))
    if encoder is not model:
        result.update(model.predict_on_batch({**batch, "masked_positions": POSITIONS}))
    return result


def _assert_equal(ours, theirs, atol=1e-5):
    for key, want in theirs.items():
        got = ours[key]
        if key == "sequence_output":
            got, want = got[MASK.astype(bool)], want[MASK.astype(bool)]
        assert np.max(np.abs(got - want)) <= atol, f"{key} differs by {np.max(np.abs(got - want)):.3g}"


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_transformers_checkpoint_loads_and_saves_back_with_equal_outputs(name, tmp_path):
    hf = _randomised(name)
    hf.save_pretrained(tmp_path / "hf")
    batch = _batch(name)
    want = _hf_outputs(hf, batch)
    with_heads = name in ("bert", "albert")
    ours = load_checkpoint(tmp_path / "hf", with_heads=with_heads)
    _assert_equal(_our_outputs(ours, batch), want)

    save_checkpoint(ours, tmp_path / "ours", format="hf")
    again = type(hf).from_pretrained(tmp_path / "ours").eval()
    _assert_equal(_hf_outputs(again, batch), want)


def test_the_encoder_is_the_files_to_the_bit_and_heads_the_file_lacks_are_drawn_as_bert_draws_them(tmp_path):
    """load_checkpoint builds the encoder without drawing its weights (each is then the file's);
    the pre-training heads an encoder-only folder lacks are drawn: truncated normal with
    `initializer_range` 0.02 (standard deviation 0.88 × 0.02, nothing beyond 2 × 0.02)."""
    from keras_bert_lib import bert_tiny

    encoder = bert_tiny(num_hidden_layers=2, vocab_size=300)
    save_checkpoint(encoder, tmp_path)
    pretrainer = load_checkpoint(tmp_path, with_heads=True)
    for ours, theirs in zip(pretrainer.encoder.weights, encoder.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    kernel = pretrainer.mlm_head.transform.kernel.numpy()   # 128 × 128
    assert 0.016 < kernel.std() < 0.0192 and np.abs(kernel).max() <= 0.04, (kernel.std(), np.abs(kernel).max())
