"""Training: optimizers and schedules, distribution strategies, callbacks, the pre-training run."""

from keras_bert_lib.training.callbacks import PeriodicCheckpoints, StopOnNonFiniteLoss
from keras_bert_lib.training.optimizers import create_optimizer
from keras_bert_lib.training.schedules import WarmupLinearDecay
from keras_bert_lib.training.strategy import create_strategy

__all__ = ["PeriodicCheckpoints", "StopOnNonFiniteLoss", "WarmupLinearDecay", "create_optimizer", "create_strategy"]
