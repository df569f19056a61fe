"""Distillation: a student built from a teacher's layers, the soft-target loss for task models and
the masked-LM distiller for pre-training."""

from keras_bert_lib.distillation.distillation_loss import DistillationLoss, distillation_targets
from keras_bert_lib.distillation.masked_lm_distiller import MaskedLMDistiller
from keras_bert_lib.distillation.student import student_from_teacher

__all__ = ["DistillationLoss", "MaskedLMDistiller", "distillation_targets", "student_from_teacher"]
