"""ReplacedTokenSampler: ELECTRA's corruption, the generator's samples put at the masked positions."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ReplacedTokenSampler(keras.layers.Layer):
    """x̂_i ~ softmax(generator logits_i) at each masked position i; x^corrupt = x with x̂_i at i.

    The samples carry no gradient (the discriminator's loss does not reach the generator, as in
    ELECTRA). A sample may equal the original token; the discriminator's label is then
    "original". Position 0 ([CLS]) is never masked: Google's format pads `masked_positions` with
    0, and those slots change nothing.

    Args:
        seed: int or None. Seeds the sampling (a `keras.random.SeedGenerator`).
    Call arguments:
        mlm_logits: float tensor (B, P, V): the generator's logits at the masked positions.
        token_ids: int tensor (B, T): the masked input the generator read.
        masked_positions: int tensor (B, P).
    Returns:
        dict with `corrupted_ids` int32 (B, T) and `sampled_ids` int32 (B, P).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.pretraining import ReplacedTokenSampler
        logits = np.full((1, 2, 5), -1e9, "float32")
        logits[0, 0, 3] = logits[0, 1, 4] = 0.0              # certain: 3 at position 1, 4 at position 2
        out = ReplacedTokenSampler(seed=0)(logits, np.array([[2, 1, 1, 0]]), np.array([[1, 2]]))
        out["corrupted_ids"].numpy().tolist()                # [[2, 3, 4, 0]]
        ```
    Reference:
        Clark et al., 2020, §2 (https://arxiv.org/abs/2003.10555)
    """

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, mlm_logits, token_ids, masked_positions):
        logits = ops.stop_gradient(ops.cast(mlm_logits, "float32"))
        batch, slots, vocab = ops.shape(logits)[0], ops.shape(logits)[1], ops.shape(logits)[2]
        sampled = keras.random.categorical(ops.reshape(logits, (-1, vocab)), 1, seed=self.seed_generator,
                                           dtype="int32")
        sampled = ops.reshape(sampled, (batch, slots))  # (B, P)
        positions = ops.cast(masked_positions, "int32")
        at = ops.equal(positions[:, :, None], ops.arange(ops.shape(token_ids)[1], dtype="int32")[None, None, :])
        at = ops.logical_and(at, (positions > 0)[:, :, None])  # (B, P, T): slot p is position t
        placed = ops.sum(ops.where(at, sampled[:, :, None], 0), axis=1)  # (B, T)
        corrupted = ops.where(ops.any(at, axis=1), placed, ops.cast(token_ids, "int32"))
        return {"corrupted_ids": corrupted, "sampled_ids": sampled}

    def compute_output_spec(self, mlm_logits, token_ids, masked_positions):
        return {"corrupted_ids": keras.KerasTensor(token_ids.shape, dtype="int32"),
                "sampled_ids": keras.KerasTensor(masked_positions.shape, dtype="int32")}

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}
