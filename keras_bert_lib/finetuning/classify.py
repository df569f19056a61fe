"""classify: labelled texts (or text pairs) → TextClassifier; accuracy, macro F1, Matthews (BERT §4.1)."""

import dataclasses

import numpy as np

from keras_bert_lib.data import label_classes, text_batches
from keras_bert_lib.finetuning.task import Serving, Task, TextsConfig, group_by_length_option, task_field
from keras_bert_lib.metrics import classification_metrics
from keras_bert_lib.tasks import TextClassifier
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class ClassifyConfig(TextsConfig):
    """The settings of `keras-bert finetune classify`.

    Example:
        ```python
        from keras_bert_lib.finetuning.classify import ClassifyConfig
        config = ClassifyConfig(checkpoint="minilm/", train="train.csv", validation="dev.csv", pooling="mean")
        ```
    """

    task: str = task_field("classify")
    dropout: float = option(0.1, "dropout before the classification head", within="[0, 1)")
    text_pair_column: str = option("text_pair", "column of the second text of a pair; read when the file has it")
    pooling: str = option("cls", "the [CLS] pooler, or the mean over tokens (models trained for mean pooling "
                                 "such as all-MiniLM-L6-v2)", choices=("cls", "mean"))
    group_by_length: bool = group_by_length_option()


def probability_rows(model, columns):
    """{"label", "score"} rows of a classifier: the best class (its name where the model has
    `class_names`) and its softmax probability.

    Example:
        ```python
        from keras_bert_lib.finetuning.classify import probability_rows
        # probability_rows(classifier, {"text": ["a fine film"]})   # [{"label": "fresh", "score": 0.93}]
        ```
    """
    texts = columns["text"] if columns.get("text_pair") is None else (columns["text"], columns["text_pair"])
    logits = np.asarray(model.predict(texts, verbose=0), np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    best = probabilities.argmax(-1)
    names = model.class_names or list(range(model.num_classes))
    return [{"label": names[i], "score": float(p[i])} for i, p in zip(best, probabilities)]


class Classify(Task):
    """Labelled texts, or pairs when the file has the pair column → `TextClassifier`."""

    name = "classify"
    description = "labelled texts, or text pairs, into classes (TextClassifier)"
    reads = ("CSV, TSV or JSONL files with a text column, a label column and, for pairs, a text_pair column; "
             "or a TFDS data set (--tfds glue/sst2)")
    config_class = ClassifyConfig
    model_class = TextClassifier
    metrics = ("accuracy", "f1_macro", "matthews", "f1")  # f1: of the second class, for two classes
    serves = Serving(inputs=("text",), outputs=("probabilities", "label"))
    prediction_columns = ("text", "text_pair")
    pairs = None  # read pairs when the file has them

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        train, validation = config.read(pairs=self.pairs)
        if self.pairs and train.pairs is None:  # a TFDS data set of single texts
            raise ValueError(f"{train.source} has one text a row; {self.name} reads pairs: use "
                             "`keras-bert finetune classify` for single texts.")
        self.names, (train_ids, self.validation_ids) = label_classes(train, validation)
        if len(self.names) < 2:
            raise ValueError(f"{train.source} has one label only ({self.names[0]!r}); a classifier needs two or more.")
        self.train_data = text_batches(train.inputs, train_ids, preprocessor, config.batch_size, True, config.seed,
                                       config.group_by_length)
        self.validation_inputs = validation.inputs
        self.held_out = text_batches(validation.inputs, self.validation_ids, preprocessor, config.batch_size, False,
                                     config.seed)
        self.train_size = self.train_examples = len(train)
        self.validation_examples = len(validation)
        majority = np.bincount(train_ids, minlength=len(self.names)).argmax()
        self.baselines = {"majority class": float(np.mean(self.validation_ids == majority))}
        self.curve_baselines = self.baselines

    def build(self, encoder):
        c = self.config
        return TextClassifier(encoder, len(self.names), preprocessor=self.preprocessor, dropout=c.dropout,
                              pooling=c.pooling, class_names=self.names, trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        predicted = np.argmax(model.predict(self.validation_inputs, verbose=0), axis=-1)
        return classification_metrics(self.validation_ids, predicted, len(self.names))

    def report(self, model, fitted):
        # The classifier's compiled metrics are classification_metrics' numbers over the whole set
        # (ClassificationStatistic): the last held-out pass gave them, so no third pass is needed.
        names = [m for m in self.metrics if m != "f1" or len(self.names) == 2]
        if fitted is not None and all(m in fitted for m in names):  # float32: its shortest decimal (0.7725)
            return {m: float(str(np.float32(fitted[m]))) for m in names}
        return self.evaluate(model)

    @classmethod
    def prediction_rows(cls, model, columns):
        return probability_rows(model, columns)
