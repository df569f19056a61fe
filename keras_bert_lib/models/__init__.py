"""The encoder and its presets: `BertEncoder`, the factories that build it from a preset or a
checkpoint, and saving and loading checkpoints."""

from keras_bert_lib.models.checkpoint_loading import encoder_from_keras_hub, load_checkpoint, save_checkpoint
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
    deberta_v3_base,
    deberta_v3_large,
    deberta_v3_small,
    deberta_v3_xsmall,
    distilbert_base,
    electra_base,
    electra_large,
    electra_small,
    modernbert_base,
    modernbert_large,
    roberta_base,
)
from keras_bert_lib.models.model_file import save_model_file
from keras_bert_lib.models.trainable_blocks import set_trainable_blocks

__all__ = [
    "BertEncoder",
    "build_encoder",
    "encoder_from_keras_hub",
    "load_checkpoint",
    "save_checkpoint",
    "save_model_file",
    "set_trainable_blocks",
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
    "electra_small",
    "electra_base",
    "electra_large",
    "modernbert_base",
    "modernbert_large",
    "deberta_v3_xsmall",
    "deberta_v3_small",
    "deberta_v3_base",
    "deberta_v3_large",
]
