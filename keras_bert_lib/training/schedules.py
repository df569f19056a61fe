"""Learning-rate schedules: BERT's linear warm-up, then linear decay to zero."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """lr(step) = peak · step / warmup for step < warmup, then peak · (total - step) / (total - warmup).

    Args:
        peak_learning_rate: float (BERT pre-training: 1e-4).
        warmup_steps: int (BERT: 10,000).
        total_steps: int (BERT: 1,000,000).
    Example:
        ```python
        from keras_bert_lib.training import WarmupLinearDecay
        schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=100)
        float(schedule(5)), float(schedule(55))   # 5e-05, 5e-05
        ```
    Reference:
        Devlin et al., 2019, Appendix A.2
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps):
        if not 0 <= warmup_steps < total_steps:
            raise ValueError(f"warmup_steps={warmup_steps} must be in [0, total_steps={total_steps}).")
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(self.warmup_steps, "float32")
        total = ops.cast(self.total_steps, "float32")
        rising = self.peak_learning_rate * step / ops.maximum(warmup, 1.0)
        falling = self.peak_learning_rate * ops.maximum(total - step, 0.0) / ops.maximum(total - warmup, 1.0)
        return ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps,
                "total_steps": self.total_steps}
