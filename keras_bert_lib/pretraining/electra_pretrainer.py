"""ElectraPretrainer: replaced-token detection, a small generator and the discriminator (ELECTRA)."""

import keras
from keras import ops

from keras_bert_lib.pretraining.electra import ElectraDiscriminator
from keras_bert_lib.pretraining.pretrainer import BertPretrainer
from keras_bert_lib.pretraining.token_sampler import ReplacedTokenSampler
from keras_bert_lib.runtime.entry_points import EntryPoints

METRICS = ("mlm_loss", "rtd_loss", "mlm_accuracy", "rtd_accuracy", "replaced_precision", "replaced_recall",
           "replaced_rate")


def generator_config(config, divisor=4):
    """The generator's shape for a discriminator `config`: `divisor` times narrower (ELECTRA-Small's
    generator is 1/4 of its width, Base's 1/3), the same depth, vocabulary and embedding width.

    Example:
        ```python
        from keras_bert_lib import PRESETS
        from keras_bert_lib.pretraining.electra_pretrainer import generator_config
        generator_config(PRESETS["electra_small"]).hidden_size   # 64
        ```
    """
    hidden = max(config.hidden_size // divisor, 1)
    heads = max(min(config.num_attention_heads, hidden // 64) if hidden >= 64 else 1, 1)
    while hidden % heads:
        heads -= 1
    return config.replace(hidden_size=hidden, num_attention_heads=heads,
                          intermediate_size=max(config.intermediate_size // divisor, 1),
                          embedding_size=config.embedding_size or config.hidden_size)


def electra_generator(discriminator, divisor=4, dtype=None):
    """ELECTRA's generator for `discriminator` (an `ElectraDiscriminator`): a masked LM `divisor`
    times narrower (`generator_config`) that reads the discriminator's embedding layers (token,
    position and segment tables, their LayerNorm) as its own, as the paper ties them; its E → H
    projection, blocks and MLM head are its own.

    Example:
        ```python
        from keras_bert_lib import electra_small
        from keras_bert_lib.pretraining import ElectraDiscriminator, electra_generator
        discriminator = ElectraDiscriminator(electra_small(num_hidden_layers=1, vocab_size=100))
        generator = electra_generator(discriminator)
        assert generator.encoder.token_embedding is discriminator.encoder.token_embedding
        ```
    """
    encoder = discriminator.encoder
    shape = generator_config(encoder.config, divisor)
    return BertPretrainer(type(encoder)(shape, dtype=dtype, name="generator", shared_embeddings=encoder),
                          sentence_task=None)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ElectraPretrainer(EntryPoints, keras.Model):
    """ELECTRA's pre-training: the generator fills the masked positions, the discriminator finds them.

        x̂_i ~ softmax(G(x^masked)_i)           at each masked position i (no gradient through x̂)
        x^corrupt = x^masked with x̂_i at i
        loss = L_MLM(G) + λ · L_Disc(D)         L_Disc: binary cross-entropy over every real token, λ = 50

    A token is "replaced" where the sample differs from the original; a sample that guessed right
    counts as original (Clark et al. 2020, §2). The generator may read the discriminator's embedding
    layers (`electra_generator`, the paper's tied embeddings: the discriminator's tables then learn
    from both losses) or keep its own; the discriminator is what one fine-tunes afterwards.

    Args:
        generator: a `BertPretrainer` with `sentence_task=None` (its MLM head).
        discriminator: an `ElectraDiscriminator`.
        rtd_weight: float. λ, the discriminator loss' weight (50 in the paper).
        seed: int or None. Seeds the sampling.
    Call arguments:
        inputs: dict of `token_ids` (masked), `segment_ids`, `padding_mask`, `masked_positions`.
    Returns:
        dict with `mlm_logits` (B, P, V), `rtd_logits` (B, T) and `sampled_ids` (B, P).
    Training data: `build_pretraining_datasets(..., sentence_task=None)`: labels `{"mlm_logits":
    original ids (B, P)}`, weights `{"mlm_logits": (B, P)}`. The metrics: the two losses, MLM
    accuracy, the discriminator's accuracy over real tokens, the precision and recall of its
    "replaced" calls, and the share of real tokens replaced (`replaced_rate`, the precision that
    calling at random would get), and `replaced_auc`: the chance that a replaced token scores above
    an original one (0.5: no better than chance; it needs no threshold, so it shows learning before
    the logits cross 0 for the rare replaced class).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import electra_small
        from keras_bert_lib.pretraining import ElectraDiscriminator, ElectraPretrainer, electra_generator
        discriminator = ElectraDiscriminator(electra_small(num_hidden_layers=1, vocab_size=100))
        pretrainer = ElectraPretrainer(electra_generator(discriminator), discriminator, seed=0)
        pretrainer.compile(optimizer="adamw")
        x = {"token_ids": np.array([[2, 4, 9, 3]] * 2), "segment_ids": np.zeros((2, 4), "int32"),
             "padding_mask": np.ones((2, 4), "int32"), "masked_positions": np.array([[1], [2]])}
        logs = pretrainer.train_on_batch(x, {"mlm_logits": np.array([[7], [9]])},
                                         sample_weight={"mlm_logits": np.ones((2, 1))}, return_dict=True)
        sorted(logs)[:3]   # ['loss', 'mlm_accuracy', 'mlm_loss']
        ```
    Reference:
        Clark et al., 2020 (https://arxiv.org/abs/2003.10555); google-research/electra's run_pretraining.py
    """

    def __init__(self, generator, discriminator, rtd_weight=50.0, seed=None, **kwargs):
        if not isinstance(generator, BertPretrainer) or generator.sentence_task is not None:
            raise ValueError("generator must be a BertPretrainer with sentence_task=None: ELECTRA's generator is "
                             "a masked LM alone.")
        if not isinstance(discriminator, ElectraDiscriminator):
            raise ValueError(f"discriminator must be an ElectraDiscriminator, not {type(discriminator).__name__}.")
        if generator.encoder.config.vocab_size != discriminator.encoder.config.vocab_size:
            raise ValueError("The generator and the discriminator must share one vocabulary: vocab_size "
                             f"{generator.encoder.config.vocab_size} and {discriminator.encoder.config.vocab_size}.")
        # === Layers ===
        sampler = ReplacedTokenSampler(seed, name="sampler")
        # === Functional graph ===
        inputs = {name: keras.Input((None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
        mlm_logits = generator(inputs)["mlm_logits"]
        corrupted = sampler(mlm_logits, inputs["token_ids"], inputs["masked_positions"])
        rtd_logits = discriminator({"token_ids": corrupted["corrupted_ids"], "segment_ids": inputs["segment_ids"],
                                    "padding_mask": inputs["padding_mask"]})["rtd_logits"]
        super().__init__(inputs=inputs, outputs={"mlm_logits": mlm_logits, "rtd_logits": rtd_logits,
                                                 "sampled_ids": corrupted["sampled_ids"]}, **kwargs)
        # === Config ===
        self.generator, self.discriminator, self.sampler = generator, discriminator, sampler
        self.rtd_weight, self.seed = rtd_weight, seed
        self.trackers = [keras.metrics.Mean(name=name) for name in METRICS]
        # Threshold-free: whether replaced tokens score above original ones (0.5: no better than chance).
        self.replaced_auc = keras.metrics.AUC(num_thresholds=200, from_logits=True, name="replaced_auc")

    _extra_inputs = ("masked_positions",)

    def _input_config(self):
        return self.discriminator.encoder.config

    def compile(self, optimizer="adamw", **kwargs):
        """Compiles with ELECTRA's loss (`compute_loss`) and metrics; a `loss` or `metrics` is refused."""
        if kwargs.get("loss") not in (None, "auto") or kwargs.get("metrics") not in (None, "auto"):
            raise ValueError("ElectraPretrainer computes its own loss and metrics (compute_loss); pass neither.")
        kwargs.pop("loss", None), kwargs.pop("metrics", None), kwargs.pop("weighted_metrics", None)
        super().compile(optimizer=optimizer, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        labels = ops.cast(y["mlm_logits"], "int32")  # the original ids at the masked positions (B, P)
        weights = ops.cast(sample_weight["mlm_logits"], "float32")
        per_slot = keras.losses.sparse_categorical_crossentropy(labels, y_pred["mlm_logits"], from_logits=True)
        mlm_loss = ops.sum(per_slot * weights) / ops.maximum(ops.sum(weights), 1.0)

        # Replaced: a real slot whose sample differs from the original, spread to its position (B, T).
        slot_replaced = ops.cast(ops.not_equal(y_pred["sampled_ids"], labels), "float32") * ops.cast(weights > 0,
                                                                                                         "float32")
        positions = ops.cast(x["masked_positions"], "int32")
        at = ops.cast(ops.equal(positions[:, :, None],
                                ops.arange(ops.shape(x["token_ids"])[1], dtype="int32")[None, None, :]), "float32")
        replaced = ops.minimum(ops.sum(at * slot_replaced[:, :, None], axis=1), 1.0)
        real = ops.cast(x["padding_mask"], "float32")
        logits = ops.cast(y_pred["rtd_logits"], "float32")
        per_token = keras.losses.binary_crossentropy(replaced[..., None], logits[..., None], from_logits=True)
        rtd_loss = ops.sum(per_token * real) / ops.maximum(ops.sum(real), 1.0)

        called = ops.cast(logits > 0, "float32")
        mlm_right = ops.cast(ops.equal(ops.argmax(y_pred["mlm_logits"], -1), ops.cast(labels, "int64")), "float32")
        updates = {"mlm_loss": (mlm_loss, None), "rtd_loss": (rtd_loss, None),
                   "mlm_accuracy": (mlm_right, weights),
                   "rtd_accuracy": (ops.cast(ops.equal(called, replaced), "float32"), real),
                   "replaced_precision": (replaced, called * real), "replaced_recall": (called, replaced * real),
                   "replaced_rate": (replaced, real)}
        for tracker in self.trackers:
            value, weight = updates[tracker.name]
            tracker.update_state(value, sample_weight=weight)
        self.replaced_auc.update_state(ops.reshape(replaced, (-1,)), ops.reshape(logits, (-1,)),
                                       sample_weight=ops.reshape(real, (-1,)))
        return mlm_loss + self.rtd_weight * rtd_loss

    @property
    def shares_embeddings(self):
        """Whether the generator reads the discriminator's embedding layers (`electra_generator`)."""
        return self.generator.encoder.token_embedding is self.discriminator.encoder.token_embedding

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "generator": keras.saving.serialize_keras_object(self.generator),
                "discriminator": keras.saving.serialize_keras_object(self.discriminator),
                "rtd_weight": self.rtd_weight, "seed": self.seed, "shared_embeddings": self.shares_embeddings}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        shared = config.pop("shared_embeddings", False)
        discriminator = keras.saving.deserialize_keras_object(config.pop("discriminator"))
        generator = config.pop("generator")
        if shared:  # the generator's encoder again, on the discriminator's embedding layers
            saved = generator["config"]
            encoder = type(discriminator.encoder).from_config({**saved["encoder"]["config"],
                                                              "shared_embeddings": discriminator.encoder})
            generator = BertPretrainer(encoder, sentence_task=None, name=saved["name"])
        else:
            generator = keras.saving.deserialize_keras_object(generator)
        return cls(generator, discriminator, **config)
