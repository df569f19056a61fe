"""Encoders, the factories that build them from presets or checkpoints, and the models with heads:
the pretrainer and the fine-tuning task models."""

from keras_bert_lib.models.checkpoint_loading import encoder_from_keras_hub, load_checkpoint, save_checkpoint
from keras_bert_lib.models.cross_encoder import CrossEncoder
from keras_bert_lib.models.distillation import DistillationLoss, distillation_targets
from keras_bert_lib.models.dtype_copy import with_dtype
from keras_bert_lib.models.encoder import BertEncoder
from keras_bert_lib.models.factories import (
    albert_base,
    albert_large,
    albert_xlarge,
    albert_xxlarge,
    bert_base,
    bert_large,
    bert_medium,
    bert_mini,
    bert_small,
    bert_tiny,
    build_encoder,
    distilbert_base,
    roberta_base,
)
from keras_bert_lib.models.masked_lm_distiller import MaskedLMDistiller
from keras_bert_lib.models.model_file import save_model_file
from keras_bert_lib.models.pretrainer import BertPretrainer
from keras_bert_lib.models.sentence_embedder import InBatchNegativesLoss, SentenceEmbedder
from keras_bert_lib.models.span_question_answerer import SpanQuestionAnswerer
from keras_bert_lib.models.student import student_from_teacher
from keras_bert_lib.models.task_model import set_trainable_blocks
from keras_bert_lib.models.text_classifier import TextClassifier
from keras_bert_lib.models.token_classifier import TokenClassifier

__all__ = [
    "BertEncoder",
    "BertPretrainer",
    "CrossEncoder",
    "DistillationLoss",
    "distillation_targets",
    "InBatchNegativesLoss",
    "MaskedLMDistiller",
    "SentenceEmbedder",
    "SpanQuestionAnswerer",
    "TextClassifier",
    "TokenClassifier",
    "build_encoder",
    "set_trainable_blocks",
    "student_from_teacher",
    "encoder_from_keras_hub",
    "load_checkpoint",
    "save_checkpoint",
    "save_model_file",
    "with_dtype",
    "bert_tiny",
    "bert_mini",
    "bert_small",
    "bert_medium",
    "bert_base",
    "bert_large",
    "albert_base",
    "albert_large",
    "albert_xlarge",
    "albert_xxlarge",
    "distilbert_base",
    "roberta_base",
]
