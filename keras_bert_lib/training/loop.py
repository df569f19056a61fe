"""The training loop every run shares: its settings, its output folder, and `train`.

A run (pre-training, fine-tuning, distillation) builds its data and its model; `train` does the
rest the same way for all: strategy, optimizer and schedule, XLA, the callbacks that stop on a
NaN, back up for resuming, keep checkpoints and log (TensorBoard, CSV), a progress bar, and the
curves.
"""

import contextlib
import dataclasses
import json
import logging
import math
import os
import shutil

import keras
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.file_checks import check_writable_folder, fingerprint, read_json
from keras_bert_lib.output_lock import output_lock
from keras_bert_lib.progress import progress_verbose
from keras_bert_lib.runtime.compile_path import choose_jit_compile, model_width
from keras_bert_lib.training.backups import EpochBackups, backups, restore_backup
from keras_bert_lib.training.callbacks import KeepInterrupts, PeriodicCheckpoints, StopOnNonFiniteLoss
from keras_bert_lib.training.curves import plot_curves, read_history
from keras_bert_lib.training.keras_mends import mend_fit
from keras_bert_lib.training.optimizers import OPTIMIZERS, create_optimizer
from keras_bert_lib.training.strategy import STRATEGIES, create_distribution, create_strategy

logger = logging.getLogger(__name__)
DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")


def option(default, help, **kwargs):
    """A config field with its help text (shown by the command line's --help). `within="[0, 1)"`
    (an interval; `inf` for no bound) refuses any other value when the config is made
    (`check_within`); `choices=` and `input_path=True` are read by the config and the command line.

    Example:
        ```python
        import dataclasses
        from keras_bert_lib.training.loop import option

        @dataclasses.dataclass(frozen=True)
        class MyConfig:
            steps: int = option(100, "training steps")
        ```
    """
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata={"help": help, **kwargs})
    return dataclasses.field(default=default, metadata={"help": help, **kwargs})


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """The settings every run shares: where it writes, how long and how it trains.

    Example:
        ```python
        from keras_bert_lib.training.loop import LoopConfig
        config = LoopConfig(output_dir="runs/try", steps=100, steps_per_epoch=50)
        ```
    """

    output_dir: str = option("runs/run", "folder for the config, checkpoints, logs, curves and report")
    overwrite: bool = option(False, "start again in an output_dir that holds a finished run or one "
                                    "with other settings (its files are deleted)")
    steps: int = option(1000, "optimizer steps in all")
    steps_per_epoch: int = option(100, "steps between backups (for resuming), held-out evaluations "
                                       "and points on the curves; must divide steps")
    checkpoint_every: int = option(500, "steps between kept checkpoints (output_dir/checkpoints)")
    keep_checkpoints: int = option(3, "how many of the newest checkpoints to keep")
    learning_rate: float = option(1e-4, "peak learning rate", within="(0, inf)")
    warmup_steps: int = option(100, "steps of linear warm-up, then linear decay to 0", within="[0, inf)")
    weight_decay: float = option(0.01, "decoupled weight decay (never on LayerNorm or biases)", within="[0, inf)")
    optimizer: str = option("adamw", "optimizer", choices=OPTIMIZERS)
    clipnorm: float | None = option(1.0, "clip gradients to this global norm ('none': no clipping)",
                                    within="(0, inf)")
    gradient_accumulation_steps: int | None = option(None, "apply the mean gradient of this many "
                                                           "batches ('none': every batch)")
    dtype: str = option("float32", "Keras dtype policy", choices=DTYPES)
    strategy: str = option("auto", "tf.distribute strategy", choices=STRATEGIES)
    jit_compile: bool = option(True, "compile training steps with XLA where it pays (on a CPU, batches of varying "
                                     "width or bfloat16 on AVX512-BF16/AMX run in TensorFlow's graph)")
    seed: int = option(0, "seed of the data split, instances, masks and initial weights")

    def __post_init__(self):
        for field in dataclasses.fields(self):
            allowed = field.metadata.get("choices")
            if allowed is not None and getattr(self, field.name) not in allowed:
                raise ValueError(f"{cli_flag(field.name)} {getattr(self, field.name)!r} is not one of "
                                 f"{', '.join(map(str, allowed))}.")
        for name in ("steps", "steps_per_epoch", "checkpoint_every", "keep_checkpoints"):
            if getattr(self, name) is not None and getattr(self, name) < 1:  # None: a run derives it from its data
                raise ValueError(f"{cli_flag(name)} {getattr(self, name)} must be at least 1.")
        check_within(self)
        if self.steps and self.steps_per_epoch and self.steps % self.steps_per_epoch:
            raise ValueError(f"--steps {self.steps} is not a multiple of --steps-per-epoch {self.steps_per_epoch}; "
                             "change one so that the run ends where the learning-rate schedule does.")
        if self.steps and self.warmup_steps is not None and self.warmup_steps > self.steps:
            raise ValueError(f"--warmup-steps {self.warmup_steps} is longer than the run's {self.steps} steps: the "
                             f"learning rate would never reach its peak; warm up for at most {self.steps}.")

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def check_within(config):
    """Raises a ValueError naming the flag, the value and the interval for the first field of
    `config` (a dataclass) whose `within` interval (`option`) does not hold its value; None passes.

    Example:
        ```python
        from keras_bert_lib.training.loop import LoopConfig
        try:
            LoopConfig(learning_rate=-1e-4)
        except ValueError as e:
            print(e)   # --learning-rate -0.0001 is outside (0, inf): peak learning rate.
        ```
    """
    for field in dataclasses.fields(config):
        within, value = field.metadata.get("within"), getattr(config, field.name)
        if within is None or value is None:
            continue
        low, high = (float(bound) for bound in within[1:-1].split(","))
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not (number and (low <= value if within[0] == "[" else low < value)
                and (value <= high if within[-1] == "]" else value < high)):
            raise ValueError(f"{cli_flag(field.name)} {value} is outside {within}: {field.metadata['help']}.")


def cli_flag(name):
    """The command-line flag of config field `name`, for messages that serve both ways in.

    Example:
        ```python
        from keras_bert_lib.training.loop import cli_flag
        assert cli_flag("batch_size") == "--batch-size"
        ```
    """
    return "--" + name.replace("_", "-")


# Files a run leaves besides config.json: if any is there, the folder holds a run.
_RUN_FILES = ("report.json", "backup", "history.csv", "checkpoints", "vocab.txt", "spiece.model", "vocab.json",
              "merges.txt", "pretraining_data")


def prepare_output_dir(config):
    """Makes `config.output_dir` ready; returns the finished run's report, or None to train.

    - a folder that cannot be written (a file in the way, no permission): a ValueError, before
      anything is done;
    - a folder that holds a finished run with the same settings: its report, nothing changed;
    - one that holds a run with other settings: a ValueError naming them. Input files count by
      their bytes, not their paths: the same bytes elsewhere (a checkpoint in a package
      reinstalled in another virtualenv, a moved checkout) are the same setting, and config.json
      takes the new paths; other bytes at the same path are another setting;
    - `overwrite=True`: whatever was there is deleted first (but the lock of `run_lock`).
    Then `config.json` and `inputs.json` (the fingerprints of the input files) are written
    (atomically). A `config.json`, `inputs.json` or `report.json` that is not JSON is named in a
    ValueError with the fix.

    Example:
        ```python
        import tempfile
        from keras_bert_lib.training.loop import LoopConfig, prepare_output_dir
        assert prepare_output_dir(LoopConfig(output_dir=tempfile.mkdtemp())) is None
        ```
    """
    folder = config.output_dir
    check_writable_folder(folder, "--output-dir")
    saved, inputs = os.path.join(folder, "config.json"), os.path.join(folder, "inputs.json")
    holds_run = any(os.path.exists(os.path.join(folder, name)) for name in _RUN_FILES)
    if config.overwrite and os.path.isdir(folder):
        for name in os.listdir(folder):
            if name != LOCK:
                path = os.path.join(folder, name)
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    elif holds_run and os.path.isfile(saved):
        before = _read_json(saved)
        now = json.loads(config.to_json())
        changed = {k: (before.get(k), v) for k, v in now.items() if k != "overwrite" and before.get(k) != v}
        read_before, read_now = _read_json(inputs), _input_fingerprints(config)
        if read_before is not None:  # input files are compared by their bytes (runs before inputs.json: paths)
            for k in set(read_before) | set(read_now):
                changed.pop(k, None)
                if read_before.get(k) != read_now.get(k):
                    changed[k] = (before.get(k), f"{now[k]} (other bytes)")
                elif before.get(k) != now[k]:
                    logger.warning("%s: the same files as the run's, under a new path: %s.", k, now[k])
        if changed:
            settings = "; ".join(f"{cli_flag(k)} {was} then, {now} now" for k, (was, now) in sorted(changed.items()))
            raise ValueError(f"{folder} holds a run with other settings ({settings}): choose another --output-dir, "
                             "or pass --overwrite to delete it and start again.")
        atomic_write_text(saved, config.to_json())
        report = os.path.join(folder, "report.json")
        if os.path.isfile(report):
            logger.warning("%s holds this run, finished: it is not trained again (--overwrite trains it again).",
                           folder)
            return _read_json(report)
    os.makedirs(folder, exist_ok=True)
    atomic_write_text(saved, config.to_json())
    atomic_write_text(inputs, json.dumps(_input_fingerprints(config), indent=2, sort_keys=True))
    return None


def _read_json(path):
    try:
        return read_json(path)
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise ValueError(str(e).replace(": restore it, or write it again.", ": restore it, or pass --overwrite to "
                                        "start the run again.")) from None


LOCK = ".lock"  # in a run's folder while a process writes it (`run_lock`)


@contextlib.contextmanager
def run_lock(folder):
    """Holds the lock of run folder `folder` for the block (`output_lock.output_lock`): a second
    run into the same folder stops at once, naming the process that writes it. The folder is
    checked for writing first.

    Example:
        ```python
        import tempfile
        from keras_bert_lib.training.loop import run_lock
        with run_lock(tempfile.mkdtemp()):
            pass   # prepare_output_dir, train, write_report
        ```
    """
    check_writable_folder(folder, "--output-dir")
    with output_lock(os.path.join(folder, LOCK), folder, "--output-dir"):
        yield


def _input_fingerprints(config):
    """{field: fingerprint} of the config's input files and folders (fields marked `input_path`)
    that exist; a list of files gives a list."""
    found = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if not field.metadata.get("input_path") or not value:
            continue
        paths = value if isinstance(value, list) else [value]
        if all(os.path.exists(p) for p in paths):
            prints = [fingerprint(p) for p in paths]
            found[field.name] = prints if isinstance(value, list) else prints[0]
    return found


def train(config, build_model, train_data, held_out, baselines=None, loss="auto"):
    """Trains `build_model()` (called under the strategy's scope) as `config` says, resumably.

    The model is compiled with `create_optimizer`'s AdamW/LAMB and schedule; killed and started
    again with the same config, training continues from the last epoch's backup
    (`output_dir/backup`); a NaN or Inf loss stops it with a FloatingPointError and the earlier
    backup kept. Writes `history.csv`, TensorBoard `logs/`, `checkpoints/` and `curves.png`
    (with `baselines`, {label: accuracy}, as grey lines). `loss` replaces the model's own
    (a distillation loss, say).

    Returns:
        (model, held-out results {metric: value} of the final weights: the compiled loss and
        metrics of the last epoch's held-out pass; over every held-out example unless
        `held_out_cut(config)`).
    Example:
        ```python
        from keras_bert_lib.training.loop import train
        # model, results = train(config, lambda: my_model, train_ds, held_out_ds)
        ```
    """
    distribution = None
    if keras.backend.backend() == "tensorflow":
        strategy = create_strategy(config.strategy)
        scope = strategy.scope()
    else:  # JAX: keras.distribution (data parallel over the devices), fed by the same tf.data
        strategy, distribution = None, create_distribution(config.strategy)
        scope = distribution.scope() if distribution else contextlib.nullcontext()
    with scope:
        model = build_model()
        optimizer = create_optimizer(config.optimizer, config.learning_rate, config.warmup_steps,
                                     config.steps, config.weight_decay, config.clipnorm,
                                     config.gradient_accumulation_steps,
                                     loss_scale=config.dtype == "mixed_float16")
        model.compile(optimizer=optimizer, jit_compile=_jit_compile(config, strategy, model_width(model),
                                                                    widths_vary(train_data)),
                      **({} if loss == "auto" else {"loss": loss}))
    if distribution is None:
        return _fit(config, model, train_data, held_out, baselines)
    with distribution.scope():  # JAX lays out each batch by it
        devices = len(distribution.device_mesh.devices.flatten())
        batch = tf.nest.flatten(train_data.element_spec)[0].shape[0]
        if batch is not None and batch % devices:
            raise ValueError(f"A batch of {batch} does not split over {devices} devices: make --batch-size a "
                             f"multiple of {devices}, or --strategy one_device.")
        return _fit(config, model, train_data, _whole_for(devices, held_out) if devices > 1 else held_out, baselines)


def held_out_cut(config):
    """Whether `train` cuts the held-out batches to a multiple of the device count (Keras' JAX
    backend, data parallel over several devices), so that the held-out results it returns leave
    out up to devices - 1 examples.

    Example:
        ```python
        from keras_bert_lib.training.loop import LoopConfig, held_out_cut
        held_out_cut(LoopConfig(strategy="one_device"))   # False
        ```
    """
    if keras.backend.backend() == "tensorflow" or config.strategy == "one_device":
        return False
    return len(keras.distribution.list_devices()) > 1


def _whole_for(devices, data):
    """`data`'s batches cut to a multiple of `devices` (a data-parallel step splits each batch
    evenly): at most devices - 1 held-out examples of the last batch are left out, as
    a warning says."""
    logger.warning("Data parallel over %d devices: the held-out set's last batch is cut to a multiple of %d "
                   "(at most %d examples left out).", devices, devices, devices - 1)

    def cut(*batch):
        size = tf.shape(tf.nest.flatten(batch)[0])[0] // devices * devices
        return tf.nest.map_structure(lambda t: t[:size], batch if len(batch) > 1 else batch[0])

    return data.map(cut).filter(lambda *batch: tf.shape(tf.nest.flatten(batch)[0])[0] > 0)


def _fit(config, model, train_data, held_out, baselines):
    mend_fit(model)
    out = config.output_dir
    backup, history_csv = os.path.join(out, "backup"), os.path.join(out, "history.csv")
    epochs = config.steps // config.steps_per_epoch
    _build_optimizer(model)  # before a backup's optimizer state can load into it
    done = restore_backup(model, backup)
    _keep_history(history_csv, done)
    if done:
        logger.warning("Resuming from the backup of epoch %d of %d (%s).", done, epochs, backup)
        # The batches it trained on are read past, so that the rest comes in the order an
        # uninterrupted run reads it (the pipeline's shuffles and masks are seeded).
        train_data = train_data.skip(done * config.steps_per_epoch)
    interrupts = KeepInterrupts()
    callbacks = [
        interrupts,  # a Ctrl-C swallowed in a garbage-collector callback stops at the next batch
        StopOnNonFiniteLoss(),  # before the savers: a bad step must never reach a checkpoint
        EpochBackups(backup),
        PeriodicCheckpoints(os.path.join(out, "checkpoints"), config.checkpoint_every, config.keep_checkpoints),
        keras.callbacks.TensorBoard(os.path.join(out, "logs"), update_freq=config.steps_per_epoch),
        keras.callbacks.CSVLogger(history_csv, append=True),
    ]
    try:
        with interrupts:
            fitted = model.fit(train_data, epochs=epochs, initial_epoch=done, steps_per_epoch=config.steps_per_epoch,
                               validation_data=held_out, callbacks=callbacks, verbose=progress_verbose(),
                               shuffle=False)  # the dataset shuffles itself
    except KeyboardInterrupt:
        done = backup_epoch(backup)
        saved = (f"the backup of epoch {done} of {epochs} is in {backup}" if done
                 else "no epoch had finished, so nothing was backed up")
        raise KeyboardInterrupt(f"Interrupted: {saved}; run the same command again to resume.") from None
    # The last epoch's validation ran on the final weights: that is the held-out result. Evaluated
    # anew only when this call trained no epoch (killed after its last epoch, before the end).
    results = ({k.removeprefix("val_"): float(v[-1]) for k, v in fitted.history.items() if k.startswith("val_")}
               or {k: float(v) for k, v in model.evaluate(held_out, return_dict=True, verbose=0).items()})
    try:
        plot_curves(read_history(history_csv), os.path.join(out, "curves.png"), baselines, config.steps_per_epoch)
    except ImportError as e:
        logger.warning("No curves.png: %s", e)
    return model, results


def _build_optimizer(model):
    if model.optimizer.built:
        return
    scope = model.distribute_strategy.scope() if keras.backend.backend() == "tensorflow" else contextlib.nullcontext()
    with scope:
        model.optimizer.build(model.trainable_variables)


def _keep_history(history_csv, epochs):
    """Keeps the header and the rows of the first `epochs` epochs of `history.csv` (none: a new
    run's curves start again), so that a resumed run logs each epoch once."""
    if not os.path.isfile(history_csv):
        return
    if not epochs:
        os.remove(history_csv)
        return
    with open(history_csv, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    kept = lines[:1] + [line for line in lines[1:] if line.split(",", 1)[0].isdigit()
                        and int(line.split(",", 1)[0]) < epochs]
    if kept != lines:
        atomic_write_text(history_csv, "".join(kept))


def write_report(output_dir, report):
    """Writes a finished run's `report.json` (atomically; its presence marks the run finished),
    then removes the run's backups, which only a run that has not finished needs.

    Example:
        ```python
        import tempfile
        from keras_bert_lib.training.loop import write_report
        write_report(tempfile.mkdtemp(), {"held_out": {"accuracy": 0.9}})
        ```
    """
    atomic_write_text(os.path.join(output_dir, "report.json"), json.dumps(report, indent=2, default=float))
    shutil.rmtree(os.path.join(output_dir, "backup"), ignore_errors=True)


def backup_epoch(backup):
    """The number of epochs the newest backup in folder `backup` holds (0: none).

    Example:
        ```python
        from keras_bert_lib.training.loop import backup_epoch
        assert backup_epoch("no/such/folder") == 0
        ```
    """
    found = backups(backup)
    return found[0][0] if found else 0


def widths_vary(data):
    """Whether the batches of `data` (a tf.data dataset of (features, ...)) differ in width: the
    sequence axis of its `token_ids` (or of its first feature) is unknown.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.training.loop import widths_vary
        data = tf.data.Dataset.from_tensors(({"token_ids": tf.zeros((2, 16), tf.int32)}, tf.zeros(2)))
        widths_vary(data)   # False
        ```
    """
    spec = getattr(data, "element_spec", None)
    if spec is None:
        return False
    features = spec[0] if isinstance(spec, tuple) else spec
    first = features.get("token_ids", next(iter(features.values()))) if isinstance(features, dict) else features
    shape = getattr(first, "shape", None)
    return shape is not None and shape.rank is not None and shape.rank >= 2 and shape[1] is None


def _jit_compile(config, strategy, hidden_size=None, varying=False):
    """XLA unless several replicas share the CPU (XLA cannot place one program over logical CPUs),
    the steps run in bfloat16 on a CPU with bfloat16 kernels, or the batches vary in width on a CPU
    (`compile_path`: TensorFlow's graph in both)."""
    if strategy is not None and config.jit_compile and strategy.num_replicas_in_sync > 1 \
            and not tf.config.list_logical_devices("GPU"):
        logger.warning("XLA is off: %d replicas on CPUs (XLA reads variables across logical CPU "
                       "devices and fails; on GPUs and TPUs it stays on).", strategy.num_replicas_in_sync)
        return False
    if config.jit_compile:
        jit, reason = choose_jit_compile(config.dtype, hidden_size=hidden_size,
                                         widths_vary=varying)
        if not jit:
            logger.info("XLA is off: %s.", reason)
            return False
    return config.jit_compile
