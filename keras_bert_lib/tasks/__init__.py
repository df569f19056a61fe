"""The task models, keras-hub's "tasks": an encoder with a head that takes raw strings, trains
with `fit` and answers with `predict` (`TaskModel` is what they share)."""

from keras_bert_lib.tasks.cross_encoder import CrossEncoder
from keras_bert_lib.tasks.sentence_embedder import InBatchNegativesLoss, SentenceEmbedder
from keras_bert_lib.tasks.span_question_answerer import SpanQuestionAnswerer
from keras_bert_lib.tasks.task_model import TaskModel, default_optimizer
from keras_bert_lib.tasks.text_classifier import TextClassifier
from keras_bert_lib.tasks.token_classifier import TokenClassifier

__all__ = ["CrossEncoder", "InBatchNegativesLoss", "SentenceEmbedder", "SpanQuestionAnswerer", "TaskModel",
           "TextClassifier", "TokenClassifier", "default_optimizer"]
