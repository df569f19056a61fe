"""Reading and writing Google TF1 and HuggingFace checkpoints, through explicit name maps."""

from keras_bert_lib.checkpoints.checkpoint_io import CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]
