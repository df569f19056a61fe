"""Checkpoints without a pooler (every *ForMaskedLM; RoBERTa from fairseq) load, and give
transformers' hidden states; with_heads gets the MLM head they have."""

import logging

import numpy as np
import pytest

from keras_bert_lib import load_checkpoint
from keras_bert_lib.checkpoints import CheckpointError
from tests import harness

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

SMALL = dict(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=32)
CASES = {
    "bert": lambda: transformers.BertForMaskedLM(transformers.BertConfig(**SMALL, max_position_embeddings=20)),
    "roberta": lambda: transformers.RobertaForMaskedLM(transformers.RobertaConfig(
        **SMALL, max_position_embeddings=22, type_vocab_size=1, layer_norm_eps=1e-5)),
}
MASK = harness.right_padded([9, 6, 3])


def _saved(name, tmp_path):
    torch.manual_seed(0)
    model = CASES[name]().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(tmp_path, safe_serialization=True)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_masked_lm_checkpoint_without_pooler_loads_and_equals_transformers(name, tmp_path, caplog):
    from safetensors.numpy import load_file

    model = _saved(name, tmp_path)
    assert not any("pooler" in k for k in load_file(tmp_path / "model.safetensors")), "the file has a pooler"
    ids = np.random.default_rng(0).integers(3, 60, (3, 9)).astype("int32")
    ids[MASK == 0] = 1 if name == "roberta" else 0
    batch = {"token_ids": ids, "segment_ids": np.zeros((3, 9), "int32"), "padding_mask": MASK}
    with torch.no_grad():
        hf = model(input_ids=torch.from_numpy(ids.astype("int64")),
                   attention_mask=torch.from_numpy(MASK.astype("int64")), output_hidden_states=True)
    with caplog.at_level(logging.WARNING):
        encoder = load_checkpoint(tmp_path)
    assert "has no pooler" in caplog.text and "pooled_output" not in encoder.output
    ours = encoder.predict_on_batch(batch)["sequence_output"]
    real = MASK.astype(bool)
    assert np.max(np.abs(ours[real] - hf.hidden_states[-1].numpy()[real])) <= 1e-4

    pretrainer = load_checkpoint(tmp_path, with_heads=True)
    assert pretrainer.sentence_task is None
    positions = np.array([[1, 4, 8], [0, 2, 5], [1, 2, 2]], "int32")
    logits = pretrainer.predict_on_batch({**batch, "masked_positions": positions})["mlm_logits"]
    want = np.take_along_axis(hf.logits.numpy(), positions[:, :, None], axis=1)
    assert np.max(np.abs(logits - want)) <= 1e-4


@pytest.mark.slow
def test_a_classification_checkpoint_loads_its_encoder_and_names_the_head_it_leaves(tmp_path, caplog):
    torch.manual_seed(0)
    transformers.RobertaForSequenceClassification(transformers.RobertaConfig(
        **SMALL, max_position_embeddings=22, type_vocab_size=1, num_labels=3)).save_pretrained(tmp_path)
    with caplog.at_level(logging.WARNING):
        encoder = load_checkpoint(tmp_path)
    assert "classifier.out_proj.weight" in caplog.text and "not loaded" in caplog.text
    assert "pooled_output" not in encoder.output


@pytest.mark.slow
def test_still_strict_for_every_other_tensor(tmp_path):
    from safetensors.numpy import load_file, save_file

    _saved("bert", tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    del tensors["bert.encoder.layer.1.output.dense.bias"]
    tensors["bert.encoder.extra.weight"] = np.zeros((2, 2), "float32")
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(tmp_path)
    assert "missing tensor encoder.layer.1.output.dense.bias" in str(error.value)
    assert "unknown tensor encoder.extra.weight" in str(error.value)


@pytest.mark.slow
def test_overrides_that_keep_shapes_are_taken_and_shape_fields_refused(tmp_path):
    _saved("bert", tmp_path)
    encoder = load_checkpoint(tmp_path, output_attentions=True, hidden_dropout_prob=0.0, layer_norm_eps=1e-6)
    assert "attention_probs" in encoder.output and encoder.config.layer_norm_eps == 1e-6
    with pytest.raises(ValueError, match=r"\['hidden_size'\] fix the shapes"):
        load_checkpoint(tmp_path, hidden_size=32)
