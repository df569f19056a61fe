"""Google TF1 checkpoints: exactly Google's variable names and shapes, and a lossless round trip."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import BertEncoder, BertPretrainer, load_checkpoint, save_checkpoint
from keras_bert_lib.checkpoints import CheckpointError
from tests import harness

SMALL = dict(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=32, max_position_embeddings=20, hidden_act="gelu_tanh")

# Google's names, from modeling.py (BERT) and run_pretraining.py (cls/*), with their shapes.
GOOGLE_BERT = {
    "bert/embeddings/word_embeddings": [60, 16],
    "bert/embeddings/position_embeddings": [20, 16],
    "bert/embeddings/token_type_embeddings": [2, 16],
    "bert/embeddings/LayerNorm/gamma": [16],
    "bert/embeddings/LayerNorm/beta": [16],
    "bert/pooler/dense/kernel": [16, 16],
    "bert/pooler/dense/bias": [16],
    "cls/predictions/transform/dense/kernel": [16, 16],
    "cls/predictions/transform/dense/bias": [16],
    "cls/predictions/transform/LayerNorm/gamma": [16],
    "cls/predictions/transform/LayerNorm/beta": [16],
    "cls/predictions/output_bias": [60],
    "cls/seq_relationship/output_weights": [2, 16],
    "cls/seq_relationship/output_bias": [2],
}
for _i in range(2):
    GOOGLE_BERT.update({
        f"bert/encoder/layer_{_i}/attention/self/query/kernel": [16, 16],
        f"bert/encoder/layer_{_i}/attention/self/query/bias": [16],
        f"bert/encoder/layer_{_i}/attention/self/key/kernel": [16, 16],
        f"bert/encoder/layer_{_i}/attention/self/key/bias": [16],
        f"bert/encoder/layer_{_i}/attention/self/value/kernel": [16, 16],
        f"bert/encoder/layer_{_i}/attention/self/value/bias": [16],
        f"bert/encoder/layer_{_i}/attention/output/dense/kernel": [16, 16],
        f"bert/encoder/layer_{_i}/attention/output/dense/bias": [16],
        f"bert/encoder/layer_{_i}/attention/output/LayerNorm/gamma": [16],
        f"bert/encoder/layer_{_i}/attention/output/LayerNorm/beta": [16],
        f"bert/encoder/layer_{_i}/intermediate/dense/kernel": [16, 32],
        f"bert/encoder/layer_{_i}/intermediate/dense/bias": [32],
        f"bert/encoder/layer_{_i}/output/dense/kernel": [32, 16],
        f"bert/encoder/layer_{_i}/output/dense/bias": [16],
        f"bert/encoder/layer_{_i}/output/LayerNorm/gamma": [16],
        f"bert/encoder/layer_{_i}/output/LayerNorm/beta": [16],
    })
# ALBERT's names, from google-research/albert modeling.py: one shared group, E = 8.
_G = "bert/encoder/transformer/group_0/inner_group_0/"
GOOGLE_ALBERT = {
    "bert/embeddings/word_embeddings": [60, 8],
    "bert/embeddings/position_embeddings": [20, 8],
    "bert/embeddings/token_type_embeddings": [2, 8],
    "bert/embeddings/LayerNorm/gamma": [8],
    "bert/embeddings/LayerNorm/beta": [8],
    "bert/encoder/embedding_hidden_mapping_in/kernel": [8, 16],
    "bert/encoder/embedding_hidden_mapping_in/bias": [16],
    _G + "attention_1/self/query/kernel": [16, 16], _G + "attention_1/self/query/bias": [16],
    _G + "attention_1/self/key/kernel": [16, 16], _G + "attention_1/self/key/bias": [16],
    _G + "attention_1/self/value/kernel": [16, 16], _G + "attention_1/self/value/bias": [16],
    _G + "attention_1/output/dense/kernel": [16, 16], _G + "attention_1/output/dense/bias": [16],
    _G + "LayerNorm/gamma": [16], _G + "LayerNorm/beta": [16],
    _G + "ffn_1/intermediate/dense/kernel": [16, 32], _G + "ffn_1/intermediate/dense/bias": [32],
    _G + "ffn_1/intermediate/output/dense/kernel": [32, 16],
    _G + "ffn_1/intermediate/output/dense/bias": [16],
    _G + "LayerNorm_1/gamma": [16], _G + "LayerNorm_1/beta": [16],
    "bert/pooler/dense/kernel": [16, 16],
    "bert/pooler/dense/bias": [16],
    "cls/predictions/transform/dense/kernel": [16, 8],
    "cls/predictions/transform/dense/bias": [8],
    "cls/predictions/transform/LayerNorm/gamma": [8],
    "cls/predictions/transform/LayerNorm/beta": [8],
    "cls/predictions/output_bias": [60],
    "cls/seq_relationship/output_weights": [2, 16],
    "cls/seq_relationship/output_bias": [2],
}
BATCH = {
    "token_ids": harness.token_ids(2, 7, 60),
    "segment_ids": (np.arange(7)[None] >= 4).repeat(2, 0).astype("int32"),
    "padding_mask": harness.right_padded([7, 4]),
    "masked_positions": np.array([[1, 5], [0, 3]], "int32"),
}


def _pretrainer(albert):
    shape = dict(embedding_size=8, num_hidden_groups=1) if albert else {}
    return BertPretrainer(BertEncoder(**SMALL, **shape), sentence_task="sop" if albert else "nsp")


@pytest.mark.parametrize("albert,expected,files", [
    (False, GOOGLE_BERT, ("bert_config.json", "bert_model.ckpt.index")),
    (True, GOOGLE_ALBERT, ("albert_config.json", "model.ckpt-best.index")),
], ids=["bert", "albert"])
@pytest.mark.slow
def test_tf1_checkpoint_has_googles_names_and_loads_back_identically(albert, expected, files, tmp_path):
    model = _pretrainer(albert)
    for w in model.weights:  # LayerNorm gains and biases too, so every tensor matters
        w.assign(np.random.default_rng(len(w.path)).normal(0, 0.3, w.shape).astype("float32"))
    save_checkpoint(model, tmp_path, format="tf1")
    for name in files:
        assert (tmp_path / name).is_file(), name
    assert dict(tf.train.list_variables(str(tmp_path))) == expected
    loaded = load_checkpoint(tmp_path, with_heads=True)
    assert loaded.sentence_task == model.sentence_task
    for key, value in model.predict_on_batch(BATCH).items():
        np.testing.assert_array_equal(loaded.predict_on_batch(BATCH)[key], value)


def _write(folder, tensors):
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(folder / "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=[tf.constant(tensors[n]) for n in names])


def test_optimizer_slots_are_ignored_and_unknown_tensors_are_not(tmp_path):
    save_checkpoint(BertEncoder(**SMALL), tmp_path / "a", format="tf1")
    tensors = {
        n: tf.train.load_variable(str(tmp_path / "a"), n) for n, _ in tf.train.list_variables(str(tmp_path / "a"))
    }
    slots = {f"{n}/adam_{m}": v for n, v in tensors.items() for m in "mv"}
    _write(tmp_path / "a", {**tensors, **slots, "global_step": np.array(1000, "int64")})
    assert load_checkpoint(tmp_path / "a").count_params() == BertEncoder(**SMALL).count_params()
    _write(tmp_path / "a", {**tensors, "bert/encoder/layer_0/adapter/kernel": np.zeros((16, 4), "float32")})
    with pytest.raises(CheckpointError, match=r"bert_model.ckpt does not match.*\n.*unknown tensor "
                                              r"bert/encoder/layer_0/adapter/kernel \(16, 4\)"):
        load_checkpoint(tmp_path / "a")


def test_exact_gelu_is_refused_and_the_folder_is_left_as_it_was(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="tanh approximation"):
        save_checkpoint(BertEncoder(**{**SMALL, "hidden_act": "gelu"}), tmp_path, format="tf1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
