"""Copies a keras-hub BertBackbone's weights into a keras_bert_lib BertEncoder (test/bench only).

keras-hub keeps attention kernels per head (H, N, Dh) and (N, Dh, H); ours are (H, H), the
layout of Google's checkpoints, so the copy reshapes.
"""

import numpy as np


def hub_to_ours_names(num_layers):
    """(keras-hub path, our path) pairs, in one table."""
    pairs = [
        ("token_embedding/embeddings", "token_embedding/embeddings"),
        ("position_embedding/embeddings", "position_embedding/embeddings"),
        ("segment_embedding/embeddings", "segment_embedding/embeddings"),
        ("embeddings_layer_norm/gamma", "embeddings_layer_norm/gamma"),
        ("embeddings_layer_norm/beta", "embeddings_layer_norm/beta"),
        ("pooled_dense/kernel", "pooler/kernel"),
        ("pooled_dense/bias", "pooler/bias"),
    ]
    for i in range(num_layers):
        hub, ours = f"transformer_layer_{i}/", f"layer_{i}/"
        for name in ("query", "key", "value"):
            for var in ("kernel", "bias"):
                pairs.append((f"{hub}self_attention_layer/{name}/{var}", f"{ours}attention/{name}/{var}"))
        pairs += [
            (f"{hub}self_attention_layer/attention_output/kernel", f"{ours}attention/output/kernel"),
            (f"{hub}self_attention_layer/attention_output/bias", f"{ours}attention/output/bias"),
            (f"{hub}self_attention_layer_norm/gamma", f"{ours}attention_layer_norm/gamma"),
            (f"{hub}self_attention_layer_norm/beta", f"{ours}attention_layer_norm/beta"),
            (f"{hub}feedforward_intermediate_dense/kernel", f"{ours}ffn/intermediate/kernel"),
            (f"{hub}feedforward_intermediate_dense/bias", f"{ours}ffn/intermediate/bias"),
            (f"{hub}feedforward_output_dense/kernel", f"{ours}ffn/output/kernel"),
            (f"{hub}feedforward_output_dense/bias", f"{ours}ffn/output/bias"),
            (f"{hub}feedforward_layer_norm/gamma", f"{ours}ffn_layer_norm/gamma"),
            (f"{hub}feedforward_layer_norm/beta", f"{ours}ffn_layer_norm/beta"),
        ]
    return pairs


def copy_from_keras_hub(hub_backbone, encoder):
    """Assigns every weight of `hub_backbone` to `encoder`; both must have the same shape."""
    hub = {w.path: w for w in hub_backbone.weights}
    ours = {w.path: w for w in encoder.weights}
    pairs = hub_to_ours_names(encoder.config.num_hidden_layers)
    assert sorted(h for h, _ in pairs) == sorted(hub), "keras-hub has weights the table lacks"
    assert sorted(o for _, o in pairs) == sorted(ours), "our encoder has weights the table lacks"
    for h, o in pairs:
        ours[o].assign(np.reshape(np.asarray(hub[h]), ours[o].shape))
