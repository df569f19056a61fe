"""ELECTRA's discriminator: an encoder with the replaced-token detection head (Clark et al. 2020)."""

import keras

from keras_bert_lib.heads import ReplacedTokenHead
from keras_bert_lib.runtime.entry_points import EntryPoints


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ElectraDiscriminator(EntryPoints, keras.Model):
    """encoder → rtd_logits (B, T): for each token, whether the generator replaced it.

    HuggingFace's `ElectraForPreTraining`: the encoder's `sequence_output` through a
    `ReplacedTokenHead` (dense H → H, activation, dense H → 1). A logit above 0 says "replaced".
    Logits are float32; padded positions get logits too, which the loss weights by
    `padding_mask`.

    Args:
        encoder: BertEncoder. The discriminator's encoder (its weights are shared, not copied).
    Call arguments:
        inputs: dict of the encoder's `token_ids`, `segment_ids`, `padding_mask`.
    Returns:
        dict with `rtd_logits` float32 (B, T).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import electra_small
        from keras_bert_lib.pretraining import ElectraDiscriminator
        discriminator = ElectraDiscriminator(electra_small(num_hidden_layers=1))
        out = discriminator.predict_on_batch({
            "token_ids": np.array([[101, 2009, 102]], "int32"), "segment_ids": np.zeros((1, 3), "int32"),
            "padding_mask": np.ones((1, 3), "int32")})
        out["rtd_logits"].shape   # (1, 3)
        ```
    Reference:
        Clark et al., 2020, §2 (https://arxiv.org/abs/2003.10555)
    """

    def __init__(self, encoder, **kwargs):
        config = encoder.config
        # === Layers ===
        rtd_head = ReplacedTokenHead(config.hidden_act, config.initializer_range, name="rtd_head",
                                     dtype=encoder.layers_dtype_policy)
        # === Functional graph ===
        inputs = {name: keras.Input((None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        outputs = {"rtd_logits": rtd_head(encoder(inputs)["sequence_output"])}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.rtd_head = rtd_head

    def _input_config(self):
        return self.encoder.config

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "encoder": keras.saving.serialize_keras_object(self.encoder)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
