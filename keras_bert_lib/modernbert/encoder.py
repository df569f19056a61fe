"""ModernBertEncoder: ModernBERT's encoder as one functional keras.Model."""

import keras
from keras import ops

from keras_bert_lib.encoder_families import FamilyEncoder
from keras_bert_lib.layers import TokenEmbedding
from keras_bert_lib.modernbert.block import ModernBertBlock
from keras_bert_lib.modernbert.config import ModernBertConfig


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ModernBertEncoder(FamilyEncoder):
    """ModernBERT: token embeddings, L bias-free pre-norm blocks alternating global and local
    attention, and a final norm.

        x₀ = Dropout(LayerNorm(token(ids)))                               no position or segment table
        x_l = ModernBertBlock_l(x_{l-1})   global (rotary base 160k) when l mod n = 0, else local (base 10k,
                                           each position seeing local_attention/2 either side)
        sequence_output = LayerNorm(x_L)

    It takes and gives what `BertEncoder` does, so every task model, export and run takes it:
    inputs `token_ids`, `segment_ids` (read by no layer: ModernBERT has no segments) and
    `padding_mask`, int32 (B, T); outputs `sequence_output` (B, T, H) and, when asked,
    `hidden_states` (B, L+1, T, H) and `attention_probs` (B, L, A, T, T). There is no pooler: a
    classifier reads [CLS] or the mean, as HuggingFace's `classifier_pooling`.

    Args:
        config: a `ModernBertConfig` (default: ModernBERT-base's shape). Its fields may also come
            as keyword arguments, which replace the config's.
        output_hidden_states: bool. Also output every layer's hidden states.
        output_attentions: bool. Also output every layer's attention probabilities (the local
            layers then compute the full T × T band instead of their blocks).
        dtype: a Keras dtype policy for the layers ("mixed_bfloat16", …).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import modernbert_base
        encoder = modernbert_base(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=96)
        batch = {"token_ids": np.array([[50281, 100, 50282, 50283]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
                 "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
        encoder.predict_on_batch(batch)["sequence_output"].shape   # (1, 4, 64)
        ```
    Reference:
        Warner et al., 2024, Smarter, Better, Faster, Longer (https://arxiv.org/abs/2412.13663)
    """

    config_class = ModernBertConfig

    @staticmethod
    def _family_layers(config, dtype):
        norm = lambda name: keras.layers.LayerNormalization(  # noqa: E731 — bias-free: a scale, no shift
            epsilon=config.layer_norm_eps, center=False, name=name, dtype=dtype)
        blocks = [
            ModernBertBlock(config.num_attention_heads, config.intermediate_size,
                            config.global_rope_theta if config.layer_is_global(i) else config.local_rope_theta,
                            None if config.layer_is_global(i) else config.window, config.hidden_act,
                            config.layer_norm_eps, attention_norm=i > 0, attention_dropout=config.attention_dropout,
                            mlp_dropout=config.mlp_dropout, initializer_range=config.initializer_range,
                            name=config.block_name(i), dtype=dtype)
            for i in range(config.num_hidden_layers)
        ]
        return dict(
            token_embedding=TokenEmbedding(config.vocab_size, config.hidden_size, config.initializer_range,
                                           name="token_embedding", dtype=dtype),
            embeddings_layer_norm=norm("embeddings_layer_norm"),
            embeddings_dropout=keras.layers.Dropout(config.embedding_dropout, name="embeddings_dropout", dtype=dtype),
            blocks=blocks, final_layer_norm=norm("final_layer_norm"))

    @staticmethod
    def _family_forward(parts, inputs, training=None, output_range=None, output_hidden_states=False,
                 output_attentions=False):
        """The encoder's equations over its layers: symbolic inputs wire the graph; tensors run it."""
        padding_mask = inputs["padding_mask"]
        run = {} if training is None else {"training": training}
        x = parts["embeddings_layer_norm"](parts["token_embedding"](inputs["token_ids"]))
        x = parts["embeddings_dropout"](x, **run)  # (B, T, H)
        hidden_states, attention_probs = [x], []
        last = len(parts["blocks"]) - 1
        for i, block in enumerate(parts["blocks"]):
            rows = {"output_range": output_range} if output_range is not None and i == last else {}
            x = block(x, padding_mask=padding_mask, return_attention_scores=output_attentions, **run, **rows)
            if output_attentions:
                x, probs = x
                attention_probs.append(probs)
            hidden_states.append(x)
        outputs = {"sequence_output": parts["final_layer_norm"](x)}
        if output_hidden_states:
            outputs["hidden_states"] = ops.stack(hidden_states, axis=1)  # (B, L+1, T, H)
        if output_attentions:
            outputs["attention_probs"] = ops.stack(attention_probs, axis=1)  # (B, L, A, T, T)
        return outputs
