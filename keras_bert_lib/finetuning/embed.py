"""embed: (anchor, positive) pairs → SentenceEmbedder, a dual encoder trained with in-batch negatives
(Sentence-BERT's MultipleNegativesRankingLoss); recall@1/5/10 and MRR@10 of each anchor's positive."""

import dataclasses

import numpy as np

from keras_bert_lib.data import pair_batches
from keras_bert_lib.finetuning.task import Serving, Task, TextsConfig, task_field
from keras_bert_lib.metrics import retrieval_metrics
from keras_bert_lib.tasks import SentenceEmbedder
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class EmbedConfig(TextsConfig):
    """The settings of `keras-bert finetune embed`.

    Example:
        ```python
        from keras_bert_lib.finetuning.embed import EmbedConfig
        config = EmbedConfig(checkpoint="minilm/", train="pairs.jsonl", validation="dev.jsonl")
        ```
    """

    task: str = task_field("embed")
    text_column: str = option("text", "column of the anchor (a question, a query)")
    text_pair_column: str = option("text_pair", "column of the positive (its answer, a relevant passage)")
    negative_column: str | None = option(None, "column of a hard negative for each training pair, scored next to "
                                               "the in-batch negatives; 'none': in-batch only")

    def __post_init__(self):
        super().__post_init__()
        if self.negative_column and self.tfds:
            raise ValueError("--negative-column names a column of the training file; a TFDS data set has none.")


class Embed(Task):
    """(anchor, positive) pairs → `SentenceEmbedder`; every other positive of a batch is a negative."""

    name = "embed"
    description = "a sentence embedder (dual encoder) on (anchor, positive) pairs with in-batch negatives"
    reads = ("CSV, TSV or JSONL files with anchor (text) and positive (text_pair) columns, and optionally a "
             "hard negative column; no labels")
    config_class = EmbedConfig
    model_class = SentenceEmbedder
    metrics = ("recall@1", "recall@5", "recall@10", "mrr@10")
    serves = Serving(inputs=("text",), outputs=("embeddings",))
    prediction_columns = ("text",)

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        train, self.validation = config.read(pairs=True, labelled=False, negative_column=config.negative_column)
        if len(self.validation) < config.batch_size:
            raise ValueError(f"{self.validation.source} has {len(self.validation)} pairs, fewer than one batch of "
                             f"{config.batch_size}; in-batch negatives need full batches.")
        columns = (train.texts, train.pairs) + ((train.negatives,) if train.negatives else ())
        self.train_data = pair_batches(columns, preprocessor, config.batch_size, True, config.seed)
        self.held_out = pair_batches((self.validation.texts, self.validation.pairs), preprocessor, config.batch_size,
                                     False, config.seed)
        self.train_size = self.train_examples = len(train)
        self.validation_examples = len(self.validation)

    def build(self, encoder):
        return SentenceEmbedder(encoder, preprocessor=self.preprocessor, trainable_blocks=self.config.trainable_blocks)

    def evaluate(self, model):
        size = self.config.batch_size
        return retrieval_metrics(model.predict(list(self.validation.texts), batch_size=size, verbose=0),
                                 model.predict(list(self.validation.pairs), batch_size=size, verbose=0))

    @classmethod
    def prediction_rows(cls, model, columns):
        vectors = np.asarray(model.predict(list(columns["text"]), verbose=0), np.float32)
        return [{"embedding": vector.tolist()} for vector in vectors]
