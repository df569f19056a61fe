"""ModernBERT's HuggingFace tensor names, row for row with our weight paths (after the `model.` prefix).

The rows are `checkpoints.name_maps`' (our path, their name, layout); that module registers them.
"""

KEEP, TRANSPOSE = "keep", "transpose"  # checkpoints.name_maps' layouts: as stored, or a torch Linear's (out, in)

TOP = [
    ("token_embedding/embeddings", "embeddings.tok_embeddings.weight", KEEP),
    ("embeddings_layer_norm/gamma", "embeddings.norm.weight", KEEP),
    ("final_layer_norm/gamma", "final_norm.weight", KEEP),
]
_L = "layers.{i}."
BLOCK = [  # block 0 has no attention norm: neither our weight nor their tensor exists
    ("{block}/attention_layer_norm/gamma", _L + "attn_norm.weight", KEEP),
    ("{block}/attention/qkv/kernel", _L + "attn.Wqkv.weight", TRANSPOSE),  # (3H, H): q, k, v stacked
    ("{block}/attention/output/kernel", _L + "attn.Wo.weight", TRANSPOSE),
    ("{block}/ffn_layer_norm/gamma", _L + "mlp_norm.weight", KEEP),
    ("{block}/ffn/input_gate/kernel", _L + "mlp.Wi.weight", TRANSPOSE),  # (2I, H): input, then gate
    ("{block}/ffn/output/kernel", _L + "mlp.Wo.weight", TRANSPOSE),
]
HEADS = [  # ModernBertForMaskedLM's head: dense → act → norm, bias-free; the decoder tied, with a bias
    ("mlm_head/transform/kernel", "head.dense.weight", TRANSPOSE),
    ("mlm_head/layer_norm/gamma", "head.norm.weight", KEEP),
    ("mlm_head/output_bias", "decoder.bias", KEEP),
]
PREFIX = "model."
TIED = {"decoder.weight": "embeddings.tok_embeddings.weight"}
ARCHITECTURE = ("ModernBertModel", None, "ModernBertForMaskedLM")
