"""tf.data pipelines for pre-training: documents → instances (NSP/SOP) → masking → batches."""

from keras_bert_lib.data.masking import mask_tokens
from keras_bert_lib.data.pretraining_instances import (
    Instance,
    create_instances,
    pack_instances,
    read_documents,
    tokenize_documents,
)

__all__ = ["Instance", "create_instances", "mask_tokens", "pack_instances", "read_documents",
           "tokenize_documents"]
