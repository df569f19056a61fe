"""EpochConfig: the loop's settings for runs over a labelled file, counted in epochs (fine-tuning,
distillation), with BERT's fine-tuning defaults (Devlin et al., 2019, §4.1 and Google's
run_classifier.py): batch 32, lr 5e-5, 3 epochs, 10% warm-up."""

import dataclasses

from keras_bert_lib.training.loop import LoopConfig, cli_flag, option


@dataclasses.dataclass(frozen=True)
class EpochConfig(LoopConfig):
    """The settings of a run over a labelled file, counted in epochs (fine-tuning, distillation):
    BERT's defaults, the steps derived from the data unless given.

    Example:
        ```python
        from keras_bert_lib.training.epoch_config import EpochConfig
        config = EpochConfig(epochs=2, batch_size=16)
        ```
    """

    batch_size: int = option(32, "examples per step")
    epochs: int = option(3, "passes over the training data")
    warmup_fraction: float = option(0.1, "share of the steps with linear warm-up", within="[0, 1)")
    learning_rate: float = option(5e-5, "peak learning rate", within="(0, inf)")
    steps: int | None = option(None, "optimizer steps in all; 'none': epochs x the batches in the training data")
    steps_per_epoch: int | None = option(None, "steps between backups, held-out evaluations and curve points; "
                                               "'none': one pass over the training data")
    warmup_steps: int | None = option(None, "steps of linear warm-up; 'none': warmup_fraction of the steps",
                                      within="[0, inf)")
    checkpoint_every: int = option(1000, "steps between kept checkpoints (output_dir/checkpoints)")

    def __post_init__(self):
        super().__post_init__()
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{cli_flag(name)} {getattr(self, name)} must be at least 1.")

    def resolved(self, size, source):
        """The config with steps, steps_per_epoch and warmup_steps worked out for `size` training
        examples (checked: at least one batch; steps_per_epoch must divide the steps)."""
        if size < self.batch_size:
            raise ValueError(f"{source} gives {size} training rows, fewer than one batch of {self.batch_size}; "
                             "lower --batch-size.")
        per_epoch = size // self.batch_size
        steps = self.steps or self.epochs * per_epoch
        return dataclasses.replace(self, steps=steps, steps_per_epoch=self.steps_per_epoch or per_epoch,
                                   warmup_steps=(self.warmup_steps if self.warmup_steps is not None
                                                 else int(self.warmup_fraction * steps)))
