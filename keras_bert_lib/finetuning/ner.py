"""ner: words and tags (CoNLL columns or JSONL) → TokenClassifier; entity precision, recall and F1
(seqeval's default reading) for IOB tags, word accuracy for any other tag set (BERT §5.3)."""

import dataclasses

import numpy as np

from keras_bert_lib.data import array_batches, read_tagged
from keras_bert_lib.finetuning.task import FinetuneConfig, Serving, Task, task_field
from keras_bert_lib.metrics import entity_scores
from keras_bert_lib.tasks import TokenClassifier
from keras_bert_lib.text import token_features
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class NerConfig(FinetuneConfig):
    """The settings of `keras-bert finetune ner` (recipes/conll_ner.toml).

    Example:
        ```python
        from keras_bert_lib.finetuning.ner import NerConfig
        config = NerConfig(checkpoint="bert/", train="train.conll", validation="dev.conll", tag_column=3)
        ```
    """

    task: str = task_field("ner")
    dropout: float = option(0.1, "dropout before the tagging head", within="[0, 1)")
    train: str | None = option(None, "training sentences: CoNLL columns (a word a line, a blank line between "
                                     "sentences) or JSONL with tokens and tags", input_path=True)
    word_column: int = option(0, "the CoNLL column of the word")
    tag_column: int = option(-1, "the CoNLL column of the tag (-1: the last)")


class Ner(Task):
    """Tagged words → `TokenClassifier`, each word's tag read from its first word piece."""

    name = "ner"
    description = "a tag per word: named entities, parts of speech (TokenClassifier)"
    reads = "CoNLL column files (a word a line, blank lines between sentences) or JSONL with tokens and tags"
    config_class = NerConfig
    model_class = TokenClassifier
    metrics = ("precision", "recall", "f1", "accuracy")  # entity P/R/F1 for IOB tags, else word accuracy
    serves = Serving(inputs=("text",), outputs=("logits", "tag_ids"))
    prediction_columns = ("text",)

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        columns = dict(word_column=config.word_column, tag_column=config.tag_column)
        train = read_tagged(config.train, **columns)
        self.labels = train.labels()
        self.validation = read_tagged(config.validation, labels=self.labels, **columns)
        features, held = (token_features(part.words, preprocessor.tokenizer, preprocessor.sequence_length, part.tags,
                                         self.labels) for part in (train, self.validation))
        self.train_size = self.train_examples = len(train)
        self.validation_examples = len(self.validation)
        self.train_data = array_batches(features.inputs, features.labels, config.batch_size, True, config.seed,
                                        features.weights)
        self.held_out = array_batches(held.inputs, held.labels, config.batch_size, False, config.seed, held.weights)
        self.iob = all(t == "O" or t[:2] in ("B-", "I-") for t in self.labels)
        most = max(self.labels, key=lambda t: sum(s.count(t) for s in train.tags))
        self.baselines = {f"every word {most!r}": self._scores([[most] * len(s) for s in self.validation.words])}

    def build(self, encoder):
        c = self.config
        return TokenClassifier(encoder, self.labels, preprocessor=self.preprocessor, dropout=c.dropout,
                               trainable_blocks=c.trainable_blocks)

    def _scores(self, predicted):
        if self.iob:
            scores = entity_scores(self.validation.tags, predicted)
            return {k: scores[k] for k in ("precision", "recall", "f1")}
        words = np.array([t for s in self.validation.tags for t in s])
        return {"accuracy": float(np.mean(words == np.array([t for s in predicted for t in s])))}

    def evaluate(self, model):
        return self._scores(model.predict_tags(self.validation.words, self.config.batch_size))

    @classmethod
    def prediction_rows(cls, model, columns):
        """{"entities": [{"text", "label", "start", "end"}, ...]}: each entity (or, for tags that are
        not IOB, each word) with its character offsets in the text."""
        return [{"entities": [{"text": t, "label": label, "start": a, "end": b} for t, label, a, b in found]}
                for found in model.tag(list(columns["text"]))]
