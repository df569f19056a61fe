"""Encoders, the factories that build them from presets or checkpoints, and models with heads."""

from keras_bert_lib.models.checkpoint_loading import load_checkpoint, save_checkpoint
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
from keras_bert_lib.models.pretrainer import BertPretrainer

__all__ = [
    "BertEncoder", "BertPretrainer", "build_encoder", "load_checkpoint", "save_checkpoint",
    "bert_tiny", "bert_mini", "bert_small", "bert_medium", "bert_base", "bert_large",
    "albert_base", "albert_large", "albert_xlarge", "albert_xxlarge", "distilbert_base", "roberta_base",
]
