"""rerank: labelled (query, passage) pairs → CrossEncoder; MRR@10 by query and accuracy (monoBERT)."""

import dataclasses

import numpy as np

from keras_bert_lib.data import text_batches
from keras_bert_lib.finetuning.task import Serving, Task, TextsConfig, group_by_length_option, task_field
from keras_bert_lib.metrics import mrr_by_query
from keras_bert_lib.tasks import CrossEncoder
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class RerankConfig(TextsConfig):
    """The settings of `keras-bert finetune rerank`.

    Example:
        ```python
        from keras_bert_lib.finetuning.rerank import RerankConfig
        config = RerankConfig(checkpoint="minilm/", train="train.csv", validation="dev.csv")
        ```
    """

    task: str = task_field("rerank")
    dropout: float = option(0.1, "dropout before the classification head", within="[0, 1)")
    text_column: str = option("text", "column of the query")
    text_pair_column: str = option("text_pair", "column of the passage")
    label_column: str = option("label", "column of the label: 1 relevant, 0 not")
    pooling: str = option("cls", "the [CLS] pooler, or the mean over tokens (models trained for mean pooling)",
                          choices=("cls", "mean"))
    group_by_length: bool = group_by_length_option()


class Rerank(Task):
    """Labelled (query, passage) pairs → `CrossEncoder` (one relevance logit, binary cross-entropy)."""

    name = "rerank"
    description = "a cross-encoder on labelled (query, passage) pairs, to re-rank search results (CrossEncoder)"
    reads = "CSV, TSV or JSONL files with query (text), passage (text_pair) and 0/1 label columns"
    config_class = RerankConfig
    model_class = CrossEncoder
    metrics = ("mrr@10", "accuracy")
    serves = Serving(inputs=("text", "text_pair"), outputs=("score",))
    prediction_columns = ("text", "text_pair")

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        train, self.validation = config.read(pairs=True)
        labels = []
        for examples in (train, self.validation):
            values = [str(v) for v in examples.labels]
            bad = next((i for i, v in enumerate(values) if v not in ("0", "1", "0.0", "1.0")), None)
            if bad is not None:
                raise ValueError(f"{examples.where(bad)}: the label {values[bad]!r} is not 0 or 1 (re-ranking "
                                 "labels say whether the passage is relevant to the query).")
            labels.append(np.array([float(v) for v in values], "float32"))
        self.validation_labels = labels[1]
        self.train_data = text_batches(train.inputs, labels[0], preprocessor, config.batch_size, True, config.seed,
                                       config.group_by_length)
        self.held_out = text_batches(self.validation.inputs, labels[1], preprocessor, config.batch_size, False,
                                     config.seed)
        self.train_size = self.train_examples = len(train)
        self.validation_examples = len(self.validation)
        in_file_order = -np.arange(len(self.validation), dtype=float)
        self.baselines = {"mrr@10 in the file's order": self._mrr(in_file_order)}

    def _mrr(self, scores):
        return mrr_by_query(self.validation.texts, self.validation.labels, scores)

    def build(self, encoder):
        c = self.config
        return CrossEncoder(encoder, preprocessor=self.preprocessor, dropout=c.dropout, pooling=c.pooling,
                            trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        logits = np.asarray(model.predict(self.validation.inputs, verbose=0), np.float64).reshape(-1)
        accuracy = float(np.mean((logits > 0) == (self.validation_labels > 0.5)))
        return {"mrr@10": self._mrr(logits), "accuracy": accuracy}

    @classmethod
    def prediction_rows(cls, model, columns):
        logits = np.asarray(model.predict((columns["text"], columns["text_pair"]), verbose=0), np.float64)
        return [{"score": float(s)} for s in 1 / (1 + np.exp(-logits.reshape(-1)))]
