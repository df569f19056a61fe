"""DeBERTa-v3's HuggingFace tensor names (model_type deberta-v2), row for row with our weight paths
(after the `deberta.` prefix). The rows are `checkpoints.name_maps`' (our path, their name, layout);
that module registers them."""

KEEP, TRANSPOSE = "keep", "transpose"  # checkpoints.name_maps' layouts: as stored, or a torch Linear's (out, in)

TOP = [
    ("token_embedding/embeddings", "embeddings.word_embeddings.weight", KEEP),
    ("embeddings_layer_norm/gamma", "embeddings.LayerNorm.weight", KEEP),
    ("embeddings_layer_norm/beta", "embeddings.LayerNorm.bias", KEEP),
    ("relative_embedding/embeddings", "encoder.rel_embeddings.weight", KEEP),
    ("relative_embedding/layer_norm/gamma", "encoder.LayerNorm.weight", KEEP),
    ("relative_embedding/layer_norm/beta", "encoder.LayerNorm.bias", KEEP),
]
_L = "encoder.layer.{i}."
BLOCK = [
    ("{block}/attention/query/kernel", _L + "attention.self.query_proj.weight", TRANSPOSE),
    ("{block}/attention/query/bias", _L + "attention.self.query_proj.bias", KEEP),
    ("{block}/attention/key/kernel", _L + "attention.self.key_proj.weight", TRANSPOSE),
    ("{block}/attention/key/bias", _L + "attention.self.key_proj.bias", KEEP),
    ("{block}/attention/value/kernel", _L + "attention.self.value_proj.weight", TRANSPOSE),
    ("{block}/attention/value/bias", _L + "attention.self.value_proj.bias", KEEP),
    ("{block}/attention/output/kernel", _L + "attention.output.dense.weight", TRANSPOSE),
    ("{block}/attention/output/bias", _L + "attention.output.dense.bias", KEEP),
    ("{block}/attention_layer_norm/gamma", _L + "attention.output.LayerNorm.weight", KEEP),
    ("{block}/attention_layer_norm/beta", _L + "attention.output.LayerNorm.bias", KEEP),
    ("{block}/ffn/intermediate/kernel", _L + "intermediate.dense.weight", TRANSPOSE),
    ("{block}/ffn/intermediate/bias", _L + "intermediate.dense.bias", KEEP),
    ("{block}/ffn/output/kernel", _L + "output.dense.weight", TRANSPOSE),
    ("{block}/ffn/output/bias", _L + "output.dense.bias", KEEP),
    ("{block}/ffn_layer_norm/gamma", _L + "output.LayerNorm.weight", KEEP),
    ("{block}/ffn_layer_norm/beta", _L + "output.LayerNorm.bias", KEEP),
]
HEADS = [  # DebertaV2ForMaskedLM's head as transformers writes it (legacy=True, its default): BERT's names
    ("mlm_head/transform/kernel", "cls.predictions.transform.dense.weight", TRANSPOSE),
    ("mlm_head/transform/bias", "cls.predictions.transform.dense.bias", KEEP),
    ("mlm_head/layer_norm/gamma", "cls.predictions.transform.LayerNorm.weight", KEEP),
    ("mlm_head/layer_norm/beta", "cls.predictions.transform.LayerNorm.bias", KEEP),
    ("mlm_head/output_bias", "cls.predictions.bias", KEEP),
]
PREFIX = "deberta."
# DebertaV2ForSequenceClassification's context pooler (dense + GELU on [CLS]) sits outside the prefix,
# beside its classifier: a fine-tuning head, left out with a warning (a BERT folder's `pooler.` is its encoder's).
TASK_HEADS = (r"^pooler\.",)
ARCHITECTURE = ("DebertaV2Model", None, "DebertaV2ForMaskedLM")
