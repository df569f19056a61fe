"""Training: optimizers and schedules, distribution strategies, callbacks, and the loop runs share."""

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("training", also=("jax",))

from keras_bert_lib.training.backups import EpochBackups
from keras_bert_lib.training.callbacks import PeriodicCheckpoints, StopOnNonFiniteLoss
from keras_bert_lib.training.curves import plot_curves, read_history
from keras_bert_lib.training.keras_mends import mend_fit
from keras_bert_lib.training.loop import LoopConfig, prepare_output_dir, train
from keras_bert_lib.training.optimizers import create_optimizer
from keras_bert_lib.training.schedules import WarmupLinearDecay
from keras_bert_lib.training.strategy import create_strategy

__all__ = ["EpochBackups", "LoopConfig", "PeriodicCheckpoints", "StopOnNonFiniteLoss", "WarmupLinearDecay",
           "create_optimizer", "create_strategy", "mend_fit", "plot_curves", "prepare_output_dir", "read_history",
           "train"]
