"""Checkpoint files: Google TF1 and HuggingFace safetensors read and written through explicit name
maps. Building the model they describe is `keras_bert_lib.load_checkpoint` (in `models/`)."""

from keras_bert_lib.checkpoints.checkpoint_io import (
    FORMATS,
    SHAPE_FIELDS,
    Checkpoint,
    CheckpointError,
    assign_weights,
    name_rows,
    read_checkpoint,
    write_checkpoint,
)

__all__ = ["FORMATS", "SHAPE_FIELDS", "Checkpoint", "CheckpointError", "assign_weights", "name_rows",
           "read_checkpoint", "write_checkpoint"]
