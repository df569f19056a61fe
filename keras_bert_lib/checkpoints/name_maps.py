"""Name maps: our weight path ↔ each checkpoint format's tensor name, one table per format.

Rows are (our path, their name, layout). `KEEP` copies the array; `TRANSPOSE` swaps the two
axes (PyTorch `Linear.weight` is [out, in]; Google's `seq_relationship/output_weights` is [2, H];
ours are Keras kernels [in, out]). In block tables `{block}` is our block name (`layer_3`,
ALBERT's `group_0`), `{i}` the layer index, `{g}`/`{j}` ALBERT's group and inner-group index.
`{task}` is the sentence head's name (`nsp` or `sop`). Rows whose path our model lacks
(e.g. `embedding_projection` for BERT) are left out, so a checkpoint tensor with no row left is
reported as unknown.
"""

import re

from keras_bert_lib.deberta import checkpoint_names as deberta
from keras_bert_lib.modernbert import checkpoint_names as modernbert

KEEP, TRANSPOSE = "keep", "transpose"

# --- Google TF1 (BERT modeling.py, ALBERT modeling.py, run_pretraining.py) -----------------
GOOGLE_EMBEDDINGS = [
    ("token_embedding/embeddings", "bert/embeddings/word_embeddings", KEEP),
    ("position_embedding/embeddings", "bert/embeddings/position_embeddings", KEEP),
    ("segment_embedding/embeddings", "bert/embeddings/token_type_embeddings", KEEP),
    ("embeddings_layer_norm/gamma", "bert/embeddings/LayerNorm/gamma", KEEP),
    ("embeddings_layer_norm/beta", "bert/embeddings/LayerNorm/beta", KEEP),
    ("embedding_projection/kernel", "bert/encoder/embedding_hidden_mapping_in/kernel", KEEP),
    ("embedding_projection/bias", "bert/encoder/embedding_hidden_mapping_in/bias", KEEP),
    ("pooler/kernel", "bert/pooler/dense/kernel", KEEP),
    ("pooler/bias", "bert/pooler/dense/bias", KEEP),
]
GOOGLE_BERT_BLOCK = [
    ("{block}/attention/query/kernel", "bert/encoder/layer_{i}/attention/self/query/kernel", KEEP),
    ("{block}/attention/query/bias", "bert/encoder/layer_{i}/attention/self/query/bias", KEEP),
    ("{block}/attention/key/kernel", "bert/encoder/layer_{i}/attention/self/key/kernel", KEEP),
    ("{block}/attention/key/bias", "bert/encoder/layer_{i}/attention/self/key/bias", KEEP),
    ("{block}/attention/value/kernel", "bert/encoder/layer_{i}/attention/self/value/kernel", KEEP),
    ("{block}/attention/value/bias", "bert/encoder/layer_{i}/attention/self/value/bias", KEEP),
    ("{block}/attention/output/kernel", "bert/encoder/layer_{i}/attention/output/dense/kernel", KEEP),
    ("{block}/attention/output/bias", "bert/encoder/layer_{i}/attention/output/dense/bias", KEEP),
    ("{block}/attention_layer_norm/gamma", "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma", KEEP),
    ("{block}/attention_layer_norm/beta", "bert/encoder/layer_{i}/attention/output/LayerNorm/beta", KEEP),
    ("{block}/ffn/intermediate/kernel", "bert/encoder/layer_{i}/intermediate/dense/kernel", KEEP),
    ("{block}/ffn/intermediate/bias", "bert/encoder/layer_{i}/intermediate/dense/bias", KEEP),
    ("{block}/ffn/output/kernel", "bert/encoder/layer_{i}/output/dense/kernel", KEEP),
    ("{block}/ffn/output/bias", "bert/encoder/layer_{i}/output/dense/bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", "bert/encoder/layer_{i}/output/LayerNorm/gamma", KEEP),
    ("{block}/ffn_layer_norm/beta", "bert/encoder/layer_{i}/output/LayerNorm/beta", KEEP),
]
_A = "bert/encoder/transformer/group_{g}/inner_group_{j}/"
GOOGLE_ALBERT_BLOCK = [
    ("{block}/attention/query/kernel", _A + "attention_1/self/query/kernel", KEEP),
    ("{block}/attention/query/bias", _A + "attention_1/self/query/bias", KEEP),
    ("{block}/attention/key/kernel", _A + "attention_1/self/key/kernel", KEEP),
    ("{block}/attention/key/bias", _A + "attention_1/self/key/bias", KEEP),
    ("{block}/attention/value/kernel", _A + "attention_1/self/value/kernel", KEEP),
    ("{block}/attention/value/bias", _A + "attention_1/self/value/bias", KEEP),
    ("{block}/attention/output/kernel", _A + "attention_1/output/dense/kernel", KEEP),
    ("{block}/attention/output/bias", _A + "attention_1/output/dense/bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _A + "LayerNorm/gamma", KEEP),
    ("{block}/attention_layer_norm/beta", _A + "LayerNorm/beta", KEEP),
    ("{block}/ffn/intermediate/kernel", _A + "ffn_1/intermediate/dense/kernel", KEEP),
    ("{block}/ffn/intermediate/bias", _A + "ffn_1/intermediate/dense/bias", KEEP),
    ("{block}/ffn/output/kernel", _A + "ffn_1/intermediate/output/dense/kernel", KEEP),
    ("{block}/ffn/output/bias", _A + "ffn_1/intermediate/output/dense/bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _A + "LayerNorm_1/gamma", KEEP),
    ("{block}/ffn_layer_norm/beta", _A + "LayerNorm_1/beta", KEEP),
]
GOOGLE_HEADS = [
    ("mlm_head/transform/kernel", "cls/predictions/transform/dense/kernel", KEEP),
    ("mlm_head/transform/bias", "cls/predictions/transform/dense/bias", KEEP),
    ("mlm_head/layer_norm/gamma", "cls/predictions/transform/LayerNorm/gamma", KEEP),
    ("mlm_head/layer_norm/beta", "cls/predictions/transform/LayerNorm/beta", KEEP),
    ("mlm_head/output_bias", "cls/predictions/output_bias", KEEP),
    ("{task}_head/dense/kernel", "cls/seq_relationship/output_weights", TRANSPOSE),
    ("{task}_head/dense/bias", "cls/seq_relationship/output_bias", KEEP),
]
# Optimizer state and step counters that training leaves in a checkpoint.
GOOGLE_IGNORED = (r"/adam_[mv]$", r"^global_step$")
# Fine-tuning heads (run_classifier.py's output_weights/bias, run_squad.py's cls/squad): not part
# of an encoder or its pre-training heads, so they are left out, with a warning that names them.
GOOGLE_TASK_HEADS = (r"^output_(weights|bias)$", r"^cls/squad/")

# --- HuggingFace transformers (names after the model prefix `bert.`, `albert.`, …) ------------
HF_EMBEDDINGS = [
    ("token_embedding/embeddings", "embeddings.word_embeddings.weight", KEEP),
    ("position_embedding/embeddings", "embeddings.position_embeddings.weight", KEEP),
    ("segment_embedding/embeddings", "embeddings.token_type_embeddings.weight", KEEP),
    ("embeddings_layer_norm/gamma", "embeddings.LayerNorm.weight", KEEP),
    ("embeddings_layer_norm/beta", "embeddings.LayerNorm.bias", KEEP),
]
HF_BERT_POOLER = [
    ("pooler/kernel", "pooler.dense.weight", TRANSPOSE),
    ("pooler/bias", "pooler.dense.bias", KEEP),
]
HF_ALBERT_EXTRA = [
    ("embedding_projection/kernel", "encoder.embedding_hidden_mapping_in.weight", TRANSPOSE),
    ("embedding_projection/bias", "encoder.embedding_hidden_mapping_in.bias", KEEP),
    ("pooler/kernel", "pooler.weight", TRANSPOSE),
    ("pooler/bias", "pooler.bias", KEEP),
]
# ELECTRA's E → H projection (Small: 128 → 256): after the embeddings' LayerNorm, as ALBERT's.
HF_ELECTRA_PROJECTION = [
    ("embedding_projection/kernel", "embeddings_project.weight", TRANSPOSE),
    ("embedding_projection/bias", "embeddings_project.bias", KEEP),
]
_B = "encoder.layer.{i}."
HF_BERT_BLOCK = [
    ("{block}/attention/query/kernel", _B + "attention.self.query.weight", TRANSPOSE),
    ("{block}/attention/query/bias", _B + "attention.self.query.bias", KEEP),
    ("{block}/attention/key/kernel", _B + "attention.self.key.weight", TRANSPOSE),
    ("{block}/attention/key/bias", _B + "attention.self.key.bias", KEEP),
    ("{block}/attention/value/kernel", _B + "attention.self.value.weight", TRANSPOSE),
    ("{block}/attention/value/bias", _B + "attention.self.value.bias", KEEP),
    ("{block}/attention/output/kernel", _B + "attention.output.dense.weight", TRANSPOSE),
    ("{block}/attention/output/bias", _B + "attention.output.dense.bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _B + "attention.output.LayerNorm.weight", KEEP),
    ("{block}/attention_layer_norm/beta", _B + "attention.output.LayerNorm.bias", KEEP),
    ("{block}/ffn/intermediate/kernel", _B + "intermediate.dense.weight", TRANSPOSE),
    ("{block}/ffn/intermediate/bias", _B + "intermediate.dense.bias", KEEP),
    ("{block}/ffn/output/kernel", _B + "output.dense.weight", TRANSPOSE),
    ("{block}/ffn/output/bias", _B + "output.dense.bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _B + "output.LayerNorm.weight", KEEP),
    ("{block}/ffn_layer_norm/beta", _B + "output.LayerNorm.bias", KEEP),
]
_L = "encoder.albert_layer_groups.{g}.albert_layers.{j}."
HF_ALBERT_BLOCK = [
    ("{block}/attention/query/kernel", _L + "attention.query.weight", TRANSPOSE),
    ("{block}/attention/query/bias", _L + "attention.query.bias", KEEP),
    ("{block}/attention/key/kernel", _L + "attention.key.weight", TRANSPOSE),
    ("{block}/attention/key/bias", _L + "attention.key.bias", KEEP),
    ("{block}/attention/value/kernel", _L + "attention.value.weight", TRANSPOSE),
    ("{block}/attention/value/bias", _L + "attention.value.bias", KEEP),
    ("{block}/attention/output/kernel", _L + "attention.dense.weight", TRANSPOSE),
    ("{block}/attention/output/bias", _L + "attention.dense.bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _L + "attention.LayerNorm.weight", KEEP),
    ("{block}/attention_layer_norm/beta", _L + "attention.LayerNorm.bias", KEEP),
    ("{block}/ffn/intermediate/kernel", _L + "ffn.weight", TRANSPOSE),
    ("{block}/ffn/intermediate/bias", _L + "ffn.bias", KEEP),
    ("{block}/ffn/output/kernel", _L + "ffn_output.weight", TRANSPOSE),
    ("{block}/ffn/output/bias", _L + "ffn_output.bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _L + "full_layer_layer_norm.weight", KEEP),
    ("{block}/ffn_layer_norm/beta", _L + "full_layer_layer_norm.bias", KEEP),
]
_D = "transformer.layer.{i}."
HF_DISTILBERT_BLOCK = [
    ("{block}/attention/query/kernel", _D + "attention.q_lin.weight", TRANSPOSE),
    ("{block}/attention/query/bias", _D + "attention.q_lin.bias", KEEP),
    ("{block}/attention/key/kernel", _D + "attention.k_lin.weight", TRANSPOSE),
    ("{block}/attention/key/bias", _D + "attention.k_lin.bias", KEEP),
    ("{block}/attention/value/kernel", _D + "attention.v_lin.weight", TRANSPOSE),
    ("{block}/attention/value/bias", _D + "attention.v_lin.bias", KEEP),
    ("{block}/attention/output/kernel", _D + "attention.out_lin.weight", TRANSPOSE),
    ("{block}/attention/output/bias", _D + "attention.out_lin.bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _D + "sa_layer_norm.weight", KEEP),
    ("{block}/attention_layer_norm/beta", _D + "sa_layer_norm.bias", KEEP),
    ("{block}/ffn/intermediate/kernel", _D + "ffn.lin1.weight", TRANSPOSE),
    ("{block}/ffn/intermediate/bias", _D + "ffn.lin1.bias", KEEP),
    ("{block}/ffn/output/kernel", _D + "ffn.lin2.weight", TRANSPOSE),
    ("{block}/ffn/output/bias", _D + "ffn.lin2.bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _D + "output_layer_norm.weight", KEEP),
    ("{block}/ffn_layer_norm/beta", _D + "output_layer_norm.bias", KEEP),
]
# Pre-training heads: they sit outside the model prefix.
HF_HEADS = {
    "bert": [
        ("mlm_head/transform/kernel", "cls.predictions.transform.dense.weight", TRANSPOSE),
        ("mlm_head/transform/bias", "cls.predictions.transform.dense.bias", KEEP),
        ("mlm_head/layer_norm/gamma", "cls.predictions.transform.LayerNorm.weight", KEEP),
        ("mlm_head/layer_norm/beta", "cls.predictions.transform.LayerNorm.bias", KEEP),
        ("mlm_head/output_bias", "cls.predictions.bias", KEEP),
        ("{task}_head/dense/kernel", "cls.seq_relationship.weight", TRANSPOSE),
        ("{task}_head/dense/bias", "cls.seq_relationship.bias", KEEP),
    ],
    "albert": [
        ("mlm_head/transform/kernel", "predictions.dense.weight", TRANSPOSE),
        ("mlm_head/transform/bias", "predictions.dense.bias", KEEP),
        ("mlm_head/layer_norm/gamma", "predictions.LayerNorm.weight", KEEP),
        ("mlm_head/layer_norm/beta", "predictions.LayerNorm.bias", KEEP),
        ("mlm_head/output_bias", "predictions.bias", KEEP),
        ("{task}_head/dense/kernel", "sop_classifier.classifier.weight", TRANSPOSE),
        ("{task}_head/dense/bias", "sop_classifier.classifier.bias", KEEP),
    ],
    "roberta": [
        ("mlm_head/transform/kernel", "lm_head.dense.weight", TRANSPOSE),
        ("mlm_head/transform/bias", "lm_head.dense.bias", KEEP),
        ("mlm_head/layer_norm/gamma", "lm_head.layer_norm.weight", KEEP),
        ("mlm_head/layer_norm/beta", "lm_head.layer_norm.bias", KEEP),
        ("mlm_head/output_bias", "lm_head.bias", KEEP),
    ],
    "electra": [  # the generator's MLM head (ElectraForMaskedLM), the discriminator's (ElectraForPreTraining)
        ("mlm_head/transform/kernel", "generator_predictions.dense.weight", TRANSPOSE),
        ("mlm_head/transform/bias", "generator_predictions.dense.bias", KEEP),
        ("mlm_head/layer_norm/gamma", "generator_predictions.LayerNorm.weight", KEEP),
        ("mlm_head/layer_norm/beta", "generator_predictions.LayerNorm.bias", KEEP),
        ("mlm_head/output_bias", "generator_lm_head.bias", KEEP),
        ("rtd_head/dense/kernel", "discriminator_predictions.dense.weight", TRANSPOSE),
        ("rtd_head/dense/bias", "discriminator_predictions.dense.bias", KEEP),
        ("rtd_head/prediction/kernel", "discriminator_predictions.dense_prediction.weight", TRANSPOSE),
        ("rtd_head/prediction/bias", "discriminator_predictions.dense_prediction.bias", KEEP),
    ],
    "distilbert": [
        ("mlm_head/transform/kernel", "vocab_transform.weight", TRANSPOSE),
        ("mlm_head/transform/bias", "vocab_transform.bias", KEEP),
        ("mlm_head/layer_norm/gamma", "vocab_layer_norm.weight", KEEP),
        ("mlm_head/layer_norm/beta", "vocab_layer_norm.bias", KEEP),
        ("mlm_head/output_bias", "vocab_projector.bias", KEEP),
    ],
    "modernbert": modernbert.HEADS,
    "deberta-v2": deberta.HEADS,
}
HF_BLOCKS = {"bert": HF_BERT_BLOCK, "roberta": HF_BERT_BLOCK, "albert": HF_ALBERT_BLOCK,
             "distilbert": HF_DISTILBERT_BLOCK, "electra": HF_BERT_BLOCK, "modernbert": modernbert.BLOCK,
             "deberta-v2": deberta.BLOCK}
HF_TOP = {"bert": HF_EMBEDDINGS + HF_BERT_POOLER, "roberta": HF_EMBEDDINGS + HF_BERT_POOLER,
          "albert": HF_EMBEDDINGS + HF_ALBERT_EXTRA, "distilbert": HF_EMBEDDINGS,
          "electra": HF_EMBEDDINGS + HF_ELECTRA_PROJECTION, "modernbert": modernbert.TOP,
          "deberta-v2": deberta.TOP}
HF_PREFIX = {"bert": "bert.", "albert": "albert.", "roberta": "roberta.", "distilbert": "distilbert.",
             "electra": "electra.", "modernbert": modernbert.PREFIX,
             "deberta-v2": deberta.PREFIX}
# Tensors a tied or buffer-holding model stores besides its weights: name -> the tensor it must
# equal (None for buffers that hold no weights).
HF_TIED_OR_BUFFERS = {
    "embeddings.position_ids": None,
    "embeddings.token_type_ids": None,
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
    "predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "predictions.decoder.bias": "predictions.bias",
    "lm_head.decoder.weight": "embeddings.word_embeddings.weight",
    "lm_head.decoder.bias": "lm_head.bias",
    "vocab_projector.weight": "embeddings.word_embeddings.weight",
    "generator_lm_head.weight": "embeddings.word_embeddings.weight",
    **modernbert.TIED,
}
# Fine-tuning heads of *ForSequenceClassification, *ForTokenClassification and
# *ForQuestionAnswering checkpoints: left out with a warning, like Google's above.
HF_TASK_HEADS = (r"^classifier\.", r"^pre_classifier\.", r"^qa_outputs\.")
# A family's own fine-tuning heads, beside those.
HF_FAMILY_TASK_HEADS = {"deberta-v2": deberta.TASK_HEADS}
# The sequence-classification head of BertForSequenceClassification and AlbertForSequenceClassification:
# dropout and one dense layer on the pooler, outside the model prefix. (RoBERTa's and DistilBERT's
# heads are two layers on the first token: another function.)
HF_CLASSIFIER = [
    ("classifier/dense/kernel", "classifier.weight", TRANSPOSE),
    ("classifier/dense/bias", "classifier.bias", KEEP),
]
HF_CLASSIFIER_ARCHITECTURE = {"bert": "BertForSequenceClassification", "albert": "AlbertForSequenceClassification"}
# (encoder only, with heads and a sentence task (ELECTRA: the discriminator's head), with an MLM head only)
HF_ARCHITECTURE = {
    "bert": ("BertModel", "BertForPreTraining", "BertForMaskedLM"),
    "albert": ("AlbertModel", "AlbertForPreTraining", "AlbertForMaskedLM"),
    "roberta": ("RobertaModel", None, "RobertaForMaskedLM"),
    "distilbert": ("DistilBertModel", None, "DistilBertForMaskedLM"),
    "electra": ("ElectraModel", "ElectraForPreTraining", "ElectraForMaskedLM"),
    "modernbert": modernbert.ARCHITECTURE,
    "deberta-v2": deberta.ARCHITECTURE,
}


# --- keras-hub presets (BertBackbone, AlbertBackbone weight paths; attention heads merged on read:
# keras_hub_presets.backbone_tensors) ---------------------------------------------------------
KERAS_HUB_TOP = [
    ("token_embedding/embeddings", "token_embedding/embeddings", KEEP),
    ("position_embedding/embeddings", "position_embedding/embeddings", KEEP),
    ("segment_embedding/embeddings", "segment_embedding/embeddings", KEEP),
    ("embeddings_layer_norm/gamma", "embeddings_layer_norm/gamma", KEEP),
    ("embeddings_layer_norm/beta", "embeddings_layer_norm/beta", KEEP),
    ("embedding_projection/kernel", "embedding_projection/kernel", KEEP),
    ("embedding_projection/bias", "embedding_projection/bias", KEEP),
    ("pooler/kernel", "pooled_dense/kernel", KEEP),
    ("pooler/bias", "pooled_dense/bias", KEEP),
]
_K = "{layer}/"
KERAS_HUB_BLOCK = [
    ("{block}/attention/query/kernel", _K + "self_attention_layer/query/kernel", KEEP),
    ("{block}/attention/query/bias", _K + "self_attention_layer/query/bias", KEEP),
    ("{block}/attention/key/kernel", _K + "self_attention_layer/key/kernel", KEEP),
    ("{block}/attention/key/bias", _K + "self_attention_layer/key/bias", KEEP),
    ("{block}/attention/value/kernel", _K + "self_attention_layer/value/kernel", KEEP),
    ("{block}/attention/value/bias", _K + "self_attention_layer/value/bias", KEEP),
    ("{block}/attention/output/kernel", _K + "self_attention_layer/attention_output/kernel", KEEP),
    ("{block}/attention/output/bias", _K + "self_attention_layer/attention_output/bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _K + "self_attention_layer_norm/gamma", KEEP),
    ("{block}/attention_layer_norm/beta", _K + "self_attention_layer_norm/beta", KEEP),
    ("{block}/ffn/intermediate/kernel", _K + "feedforward_intermediate_dense/kernel", KEEP),
    ("{block}/ffn/intermediate/bias", _K + "feedforward_intermediate_dense/bias", KEEP),
    ("{block}/ffn/output/kernel", _K + "feedforward_output_dense/kernel", KEEP),
    ("{block}/ffn/output/bias", _K + "feedforward_output_dense/bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _K + "feedforward_layer_norm/gamma", KEEP),
    ("{block}/ffn_layer_norm/beta", _K + "feedforward_layer_norm/beta", KEEP),
]
# keras-hub's name of a block: BERT's layer i, ALBERT's group g's inner layer j.
KERAS_HUB_LAYER = {"bert": "transformer_layer_{i}", "albert": "group_{g}_inner_layer_{j}"}


def expand(top, block, config):
    """The encoder's rows: `top` once, `block` once per distinct block (shared ALBERT blocks
    appear once), with the block placeholders filled in. (Head rows hold `{task}`; the caller
    fills it.)"""
    rows = list(top)
    per_group = config.inner_group_num
    for g in range(config.num_groups):
        for j in range(per_group):
            names = {"block": config.block_name(g, j), "i": g * per_group + j, "g": g, "j": j}
            rows += [(ours.format(**names), theirs.format(**names), layout)
                     for ours, theirs, layout in block]
    return rows


def is_ignored(name, patterns):
    return any(re.search(p, name) for p in patterns)
