"""The span and token tasks of `keras-bert finetune`: squad (extractive question answering on SQuAD
JSON) and ner (a tag per word, CoNLL columns or JSONL), over the shared loop of `runs/finetune.py`."""

import json

import numpy as np
import tensorflow as tf

from keras_bert_lib.data import read_squad, read_tagged
from keras_bert_lib.metrics import entity_scores, squad_scores
from keras_bert_lib.models import SpanQuestionAnswerer, TokenClassifier, load_checkpoint
from keras_bert_lib.text import squad_features, token_features


def _batches(inputs, labels, batch_size, training, seed, weights=None):
    """Batches of packed arrays; training data shuffled anew each pass, repeated, full batches."""
    data = tf.data.Dataset.from_tensor_slices((inputs, labels) if weights is None else (inputs, labels, weights))
    if training:
        data = data.shuffle(len(next(iter(inputs.values()))), seed=seed).repeat()
    return data.batch(batch_size, drop_remainder=training).prefetch(tf.data.AUTOTUNE)


class _Squad:
    """SQuAD v1.1/v2.0 JSON → SpanQuestionAnswerer; held-out exact match and F1 (percent)."""

    def __init__(self, config, preprocessor):
        self.config, self.preprocessor = config, preprocessor
        train, self.validation = (read_squad(path, mismatched="skip") for path in (config.train, config.validation))
        with open(config.validation, encoding="utf-8") as f:
            self.dataset = json.load(f)["data"]  # what squad_scores reads
        self.skipped = {"train": _questions(config.train) - len(train),
                        "validation": squad_scores(self.dataset, {})["questions"] - len(self.validation)}
        features, held = (squad_features([e.question for e in part], [e.context for e in part],
                                         preprocessor.tokenizer, preprocessor.sequence_length, config.max_query_length,
                                         config.doc_stride, [e.answers[0] if e.answers else None for e in part])
                          for part in (train, self.validation))
        self.size = len(features.example_index)  # windows: one example can give several
        self.train_data = _batches(features.inputs, features.labels, config.batch_size, True, config.seed)
        self.held_out = _batches(held.inputs, held.labels, config.batch_size, False, config.seed)
        empty = squad_scores(self.dataset, {e.id: "" for e in self.validation})
        self.baselines = {"empty answer": {"exact_match": empty["exact_match"], "f1": empty["f1"]}}
        self.curve_baselines = None
        self.train_examples = len(train)

    def build(self):
        c = self.config
        return SpanQuestionAnswerer(load_checkpoint(c.checkpoint), preprocessor=self.preprocessor,
                                    max_query_length=c.max_query_length, doc_stride=c.doc_stride,
                                    max_answer_length=c.max_answer_length, trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        answers = model.answer([e.question for e in self.validation], [e.context for e in self.validation],
                               version_2=self.config.version_2,
                               null_score_diff_threshold=self.config.null_score_diff_threshold,
                               batch_size=self.config.batch_size)
        scores = squad_scores(self.dataset, {e.id: a["text"] for e, a in zip(self.validation, answers)})
        return {"exact_match": scores["exact_match"], "f1": scores["f1"], "skipped_questions": self.skipped}


def _questions(path):
    with open(path, encoding="utf-8") as f:
        return sum(len(p["qas"]) for article in json.load(f)["data"] for p in article["paragraphs"])


class _Ner:
    """Words and tags (CoNLL or JSONL) → TokenClassifier; held-out entity precision, recall and F1
    (seqeval's default reading) for IOB tags, word accuracy for any other tag set."""

    def __init__(self, config, preprocessor):
        self.config, self.preprocessor = config, preprocessor
        columns = dict(word_column=config.word_column, tag_column=config.tag_column)
        train = read_tagged(config.train, **columns)
        self.labels = train.labels()
        self.validation = read_tagged(config.validation, labels=self.labels, **columns)
        features, held = (token_features(part.words, preprocessor.tokenizer, preprocessor.sequence_length, part.tags,
                                         self.labels) for part in (train, self.validation))
        self.size = self.train_examples = len(train)
        self.train_data = _batches(features.inputs, features.labels, config.batch_size, True, config.seed,
                                   features.weights)
        self.held_out = _batches(held.inputs, held.labels, config.batch_size, False, config.seed, held.weights)
        self.iob = all(t == "O" or t[:2] in ("B-", "I-") for t in self.labels)
        most = max(self.labels, key=lambda t: sum(s.count(t) for s in train.tags))
        self.baselines = {f"every word {most!r}": self._scores([[most] * len(s) for s in self.validation.words])}
        self.curve_baselines = None

    def build(self):
        c = self.config
        return TokenClassifier(load_checkpoint(c.checkpoint), self.labels, preprocessor=self.preprocessor,
                               dropout=c.dropout, trainable_blocks=c.trainable_blocks)

    def _scores(self, predicted):
        if self.iob:
            scores = entity_scores(self.validation.tags, predicted)
            return {k: scores[k] for k in ("precision", "recall", "f1")}
        words = np.array([t for s in self.validation.tags for t in s])
        return {"accuracy": float(np.mean(words == np.array([t for s in predicted for t in s])))}

    def evaluate(self, model):
        return self._scores(model.predict_tags(self.validation.words, self.config.batch_size))
