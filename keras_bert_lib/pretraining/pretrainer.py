"""BertPretrainer: an encoder with BERT's two pre-training heads (masked LM + NSP/SOP)."""

import keras

from keras_bert_lib.heads import MaskedLMHead, SentencePairHead
from keras_bert_lib.pretraining.pretraining_metrics import MaskedLMPerplexity
from keras_bert_lib.runtime.entry_points import EntryPoints

SENTENCE_TASKS = ("nsp", "sop", None)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertPretrainer(EntryPoints, keras.Model):
    """encoder → {mlm_logits (B, P, V) at `masked_positions`, nsp_logits (B, 2) from the pooler}.

    The masked-LM output is tied to the encoder's token embedding table. The 2-way sentence head
    is next-sentence prediction for BERT ("nsp") or sentence-order prediction for ALBERT ("sop");
    they compute the same function and differ only in their training data, and Google's code
    names both `cls/seq_relationship`. With `sentence_task=None` (RoBERTa, DistilBERT) there is
    no sentence head and no `nsp_logits`. Logits are float32.

    Args:
        encoder: BertEncoder. The encoder to pre-train (its weights are shared, not copied).
        sentence_task: "nsp", "sop" or None.
    Call arguments:
        inputs: dict of the encoder's `token_ids`, `segment_ids`, `padding_mask` and
            `masked_positions` (int32 (B, P)).
    Returns:
        dict with `mlm_logits` float32 (B, P, V) and, with a sentence task, `nsp_logits` (B, 2).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import BertPretrainer, bert_tiny
        pretrainer = BertPretrainer(bert_tiny(num_hidden_layers=1))
        out = pretrainer.predict_on_batch({
            "token_ids": np.array([[101, 103, 102]], "int32"), "segment_ids": np.zeros((1, 3), "int32"),
            "padding_mask": np.ones((1, 3), "int32"), "masked_positions": np.array([[1]], "int32")})
        out["mlm_logits"].shape  # (1, 1, 30522)
        ```
    Reference:
        Devlin et al., 2019, §3.1; Google's run_pretraining.py
    """

    def __init__(self, encoder, sentence_task="nsp", **kwargs):
        if sentence_task not in SENTENCE_TASKS:
            raise ValueError(f"sentence_task={sentence_task!r} is not one of {SENTENCE_TASKS}.")
        if sentence_task and "pooled_output" not in encoder.output:
            raise ValueError(
                f"sentence_task={sentence_task!r} needs a pooled_output, but this encoder has no "
                "pooler (DistilBERT shape); pass sentence_task=None."
            )
        config = encoder.config
        dtype = encoder.layers_dtype_policy
        # === Layers ===
        mlm_head = MaskedLMHead(encoder.token_embedding, config.hidden_act, config.layer_norm_eps,
                                config.initializer_range, use_bias=config.family != "modernbert",  # bias-free
                                name="mlm_head", dtype=dtype)
        sentence_head = (SentencePairHead(config.initializer_range, name=f"{sentence_task}_head",
                                          dtype=dtype) if sentence_task else None)
        # === Functional graph ===
        inputs = {name: keras.Input((None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
        encoded = encoder({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})
        outputs = {"mlm_logits": mlm_head(encoded["sequence_output"], inputs["masked_positions"])}
        if sentence_head is not None:
            outputs["nsp_logits"] = sentence_head(encoded["pooled_output"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.sentence_task = sentence_task
        self.mlm_head = mlm_head
        self.sentence_head = sentence_head

    _extra_inputs = ("masked_positions",)

    def _input_config(self):
        return self.encoder.config

    def compile(self, optimizer="adamw", loss="auto", metrics="auto", weighted_metrics="auto", **kwargs):
        """Compiles with BERT's pre-training losses and metrics unless told otherwise.

        MLM: cross-entropy over the masked positions weighted by `masked_lm_weights` and divided
        by their sum (as Google's run_pretraining.py); its accuracy and perplexity use the same
        weights. NSP/SOP: cross-entropy and accuracy. Losses and metrics compute in float32.
        """
        sce = keras.losses.SparseCategoricalCrossentropy
        if loss == "auto":
            loss = {"mlm_logits": sce(from_logits=True, reduction="mean_with_sample_weight")}
            if self.sentence_task:
                loss["nsp_logits"] = sce(from_logits=True)
        if weighted_metrics == "auto":
            weighted_metrics = {"mlm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
                                               MaskedLMPerplexity(name="perplexity")]}
        if metrics == "auto":
            metrics = ({"nsp_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
                       if self.sentence_task else None)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "sentence_task": self.sentence_task}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
