"""The fine-tuning regimes of an encoder: the whole of it, its top k blocks, or none (a frozen
encoder under a trained head)."""


def set_trainable_blocks(encoder, trainable_blocks, pooler=True):
    """Applies a fine-tuning regime to `encoder`: the whole encoder trains (`None`), only its top
    `k` Transformer blocks (and the pooler and pre-LN final LayerNorm above them) train (`k`), or
    none of it (`0`: a frozen encoder, only the task head trains). With `pooler=False` (a task
    that does not read the pooler) the pooler is frozen in every regime.

    ALBERT's blocks are shared across layers, so it takes `None` or `0` only.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.models import set_trainable_blocks
        encoder = bert_tiny()
        set_trainable_blocks(encoder, 1)   # layer_1, the pooler; not the embeddings or layer_0
        ```
    """
    _set_blocks(encoder, trainable_blocks)
    if not pooler and encoder.config.with_pooler:
        encoder.get_layer("pooler").trainable = False


def _set_blocks(encoder, trainable_blocks):
    config = encoder.config
    if trainable_blocks is None:
        encoder.trainable = True
        return
    if not isinstance(trainable_blocks, int) or not 0 <= trainable_blocks <= config.num_hidden_layers:
        raise ValueError(f"trainable_blocks={trainable_blocks!r}: use None (the whole encoder), 0 (frozen) "
                         f"or a number of top blocks from 1 to {config.num_hidden_layers}.")
    encoder.trainable = trainable_blocks > 0
    if trainable_blocks in (0, config.num_hidden_layers):
        if trainable_blocks:
            encoder.trainable = True
        return
    if config.num_groups != config.num_hidden_layers or config.inner_group_num != 1:
        raise ValueError(f"trainable_blocks={trainable_blocks}: this ALBERT encoder shares its blocks across "
                         "layers, so its top blocks are its bottom ones too; use None or 0.")
    top = {config.block_name(i) for i in range(config.num_hidden_layers - trainable_blocks, config.num_hidden_layers)}
    for layer in encoder.layers:
        layer.trainable = layer.name in top or layer.name in ("pooler", "final_layer_norm")
