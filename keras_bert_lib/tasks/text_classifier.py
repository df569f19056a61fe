"""TextClassifier: one text or a sentence pair → class logits (BERT §4.1, GLUE)."""

import numbers

import keras
import numpy as np

from keras_bert_lib.distillation.distillation_loss import DistillationLoss, LabelledAccuracy, teacher_agreement
from keras_bert_lib.heads import ClassificationHead
from keras_bert_lib.metrics import ClassificationStatistic
from keras_bert_lib.tasks.task_model import HEAD_DTYPE, TaskModel, default_optimizer


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TextClassifier(TaskModel):
    """logits = W·Dropout(pooled) + b, pooled = the [CLS] pooler (BERT) or the masked mean of the
    last hidden states (models trained for mean pooling, such as all-MiniLM-L6-v2).

    A pair is packed as `[CLS] first [SEP] second [SEP]` with segment ids 0 and 1. With
    `pooling="cls"` on an encoder without a pooler (DistilBERT) the [CLS] hidden state is used, and
    the encoder's last block computes [CLS] alone (`BertEncoder.call(output_range=1)`): the same
    logits and gradients, 5/6 of that block's matrix products skipped.
    Compiled at construction with `default_optimizer()` (`keras-bert finetune`'s AdamW, warm-up and
    linear decay, sized by each `fit`), sparse categorical
    cross-entropy and the metrics `classification_metrics` reports (accuracy, macro F1, Matthews,
    and F1 for two classes; mean squared error and no metric for `num_classes=1`, a regression
    such as STS-B); `compile(...)` again to change them.

    Args:
        encoder: BertEncoder (its weights are shared, not copied).
        num_classes: int. Number of labels; 1 for regression.
        preprocessor: BertPreprocessor or None. With one, the model takes raw strings.
        dropout: float. Dropout before the dense layer (BERT: 0.1).
        pooling: "cls" or "mean".
        class_names: list of str or None: the label of each class, for `predict_labels`.
        trainable_blocks: None (fine-tune the whole encoder), k (its top k blocks) or 0 (frozen
            encoder, head only); see `set_trainable_blocks`.
    Call arguments:
        inputs: the id dict, or with a preprocessor raw texts or a `(first, second)` tuple of them.
    Returns:
        float32 logits (B, num_classes).
    Example:
        ```python
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=8)
        classifier = TextClassifier(bert_tiny(vocab_size=8, num_hidden_layers=1), num_classes=2,
                                    preprocessor=preprocessor, class_names=["negative", "positive"])
        classifier.fit(["good film", "bad film"], [1, 0], epochs=1, verbose=0)
        classifier.predict_labels(["good film"])   # e.g. ["positive"]
        ```
    Reference:
        Devlin et al., 2019, §4.1 and Figure 4 (a), (b)
    """

    def __init__(self, encoder, num_classes, preprocessor=None, dropout=0.1, pooling="cls", class_names=None,
                 trainable_blocks=None, **kwargs):
        if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1:
            raise ValueError(f"num_classes={num_classes!r}: the number of classes is a positive integer (1 for a "
                             "regression).")
        if class_names is not None and len(class_names) != num_classes:
            raise ValueError(f"{len(class_names)} class_names for num_classes={num_classes}.")
        dtype = HEAD_DTYPE
        # === Layers ===
        head = ClassificationHead(num_classes, dropout, encoder.config.initializer_range,
                                  name="classifier", dtype=dtype)
        # === Functional graph ===
        inputs = self._encoder_inputs()
        pooled, uses_pooler = self._pooled(encoder, inputs, pooling, dtype)
        super().__init__(inputs=inputs, outputs=head(pooled), **kwargs)
        # === Config ===
        self.head = head
        self.num_classes = num_classes
        self.dropout = dropout
        self.pooling = pooling
        self.class_names = list(class_names) if class_names is not None else None
        self._finish_init(encoder, preprocessor, trainable_blocks, uses_pooler)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Cross-entropy and accuracy for classes, mean squared error for one output, unless told
        otherwise; with a `DistillationLoss`, accuracy on the targets' hard labels where they have one
        and the agreement with the teacher."""
        if loss == "auto":
            loss = (keras.losses.MeanSquaredError() if self.num_classes == 1
                    else keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        if metrics == "auto":  # a regression has no accuracy; distillation's targets carry the label last
            distilling = [LabelledAccuracy(), keras.metrics.MeanMetricWrapper(teacher_agreement, name="agreement")]
            metrics = ([] if self.num_classes == 1 else distilling if isinstance(loss, DistillationLoss)
                       else self._class_metrics())
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def _class_metrics(self):
        """Accuracy, macro F1, Matthews and, for two classes, class 1's F1: `classification_metrics`'
        numbers, summed over the whole held-out set by `fit`'s validation pass."""
        statistics = ("f1_macro", "matthews", "f1") if self.num_classes == 2 else ("f1_macro", "matthews")
        return ([keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                + [ClassificationStatistic(self.num_classes, s) for s in statistics])

    def _targets(self, y):
        """Class indices from `y`: names are looked up in `class_names`; every label is checked
        against [0, num_classes) before training (on the device a bad index is a graph error)."""
        y = super()._targets(y)
        if self.num_classes == 1 or not isinstance(y, np.ndarray) or (y.ndim > 1 and y.shape[-1] > 1):
            return y  # a regression; a dataset; soft targets (distillation) or one-hot rows
        if y.dtype.kind in "USO":
            if not self.class_names:
                raise ValueError(f"The labels are strings ({y.flat[0]!r}, ...) but this classifier has no class_names; "
                                 "build it with class_names=[...] (their order gives the indices), or pass indices.")
            index = {name: i for i, name in enumerate(self.class_names)}
            unknown = [(row, label) for row, label in enumerate(y.reshape(-1)) if str(label) not in index]
            if unknown:
                row, label = unknown[0]
                raise ValueError(f"Label {str(label)!r} (row {row}) is not one of the class_names {self.class_names}.")
            return np.array([index[str(label)] for label in y.reshape(-1)], "int32").reshape(y.shape)
        flat = y.reshape(-1)
        if flat.dtype.kind in "iuf":
            bad = np.flatnonzero((flat < 0) | (flat >= self.num_classes) | (flat != np.floor(flat)))
            if len(bad):
                raise ValueError(f"Label {flat[bad[0]].item()!r} (row {bad[0]}) is outside the classes 0 … "
                                 f"{self.num_classes - 1} (num_classes={self.num_classes}); pass class indices"
                                 f"{' or the class_names ' + str(self.class_names) if self.class_names else ''}.")
        return y

    def predict_labels(self, x, batch_size=32):
        """The predicted class of each input, as its name when the model has `class_names`."""
        predicted = np.argmax(self.predict(x, batch_size=batch_size, verbose=0), axis=-1)
        return [self.class_names[i] for i in predicted] if self.class_names else predicted

    def checkpoint_class_names(self):
        if self.pooling != "cls" or not self.encoder.config.with_pooler:
            raise ValueError("HuggingFace's *ForSequenceClassification reads the [CLS] pooler; this classifier "
                             f"pools by {self.pooling!r}{'' if self.encoder.config.with_pooler else ' (no pooler)'}, "
                             "so it has no HuggingFace equivalent: save it as .keras, or its encoder alone.")
        return self.class_names or [f"LABEL_{i}" for i in range(self.num_classes)]

    def get_config(self):
        return {**self._base_config(), "num_classes": self.num_classes, "dropout": self.dropout,
                "pooling": self.pooling, "class_names": self.class_names}
