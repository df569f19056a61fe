"""Attention masks as additive float32 biases (functions only)."""

from keras import ops

# Finite and far below any logit: exp() underflows to exactly 0 in float32, so a masked key
# gets probability 0, and no inf-inf NaN can arise. The bias is always added in float32.
MASK_VALUE = -1e9


def merge_masks(padding_mask=None, attention_mask=None):
    """One boolean (B, T|1, S) mask from a key padding mask (B, S) and/or a (B, T, S) mask.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.masks import merge_masks
        mask = merge_masks(padding_mask=np.array([[1, 1, 0]]))  # (1, 1, 3)
        ```
    """
    mask = None
    if padding_mask is not None:
        # expand_dims, not [:, None]: TFLite's built-in StridedSlice has no new axes.
        mask = ops.expand_dims(ops.cast(padding_mask, "bool"), 1)  # (B, 1, S)
    if attention_mask is not None:
        attention_mask = ops.cast(attention_mask, "bool")  # (B, T, S)
        mask = attention_mask if mask is None else ops.logical_and(mask, attention_mask)
    return mask


def attention_bias(padding_mask=None, attention_mask=None):
    """Additive float32 bias (B, 1, T|1, S): 0 where a query may attend, MASK_VALUE where not.

    Returns None when there is no mask at all.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.masks import attention_bias
        bias = attention_bias(np.array([[1, 1, 0]]))  # (1, 1, 1, 3): [0, 0, -1e9]
        ```
    """
    if attention_mask is None and padding_mask is not None:
        # (1 − mask)·MASK_VALUE over (B, 1, 1, S): BERT's modeling.py form, which ONNX Runtime's
        # optimiser recognises as the key mask of a fused Attention.
        keys = ops.expand_dims(ops.expand_dims(padding_mask, 1), 1)  # (B, 1, 1, S)
        return (1.0 - ops.cast(keys, "float32")) * MASK_VALUE  # padding_mask holds 0/1 (or bool)
    mask = merge_masks(padding_mask, attention_mask)
    if mask is None:
        return None
    return ops.expand_dims(ops.where(mask, 0.0, MASK_VALUE), 1)  # (B, 1, T|1, S), heads broadcast
