"""The pre-training run: corpus → vocabulary → instances → dynamic masking → fit → report → export.

`recipes/pretrain.py` and `keras-bert pretrain` are thin over `run_pretraining`. The defaults are
the quick-start: the standard-library corpus, a learned vocabulary and a BERT-Tiny for a few
minutes on a 2-core CPU.
"""

import dataclasses
import json
import logging
import os

import numpy as np

from keras_bert_lib.atomic_write import atomic_write_text

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class PretrainConfig:
    """Everything a pre-training run reads; printed at start and saved as `config.json`.

    The defaults are the quick-start, sized for ten minutes on a 2-core CPU: BERT-Tiny without
    dropout, the standard-library corpus's vocabulary (an 8,000 cap; its learner stops at ~6,600
    pieces), 64-token pairs in batches of 64 (more text per pair for next-sentence prediction than
    32 tokens, at the same tokens per step), 20 dupes (fresh pairs, so NSP does not memorise),
    2,200 steps at 2e-3 (docs/pretraining.md has the sweep behind these numbers). A real run sets
    `corpus`, `preset`, `dropout` 0.1, `max_seq_length` 128/512, `max_predictions` 20/80,
    `batch_size` 256, `steps` 1,000,000 and `learning_rate` 1e-4 (BERT's).

    Example:
        ```python
        from keras_bert_lib.training.pretrain import PretrainConfig
        config = PretrainConfig(steps=200, batch_size=16)
        ```
    """

    corpus: list = dataclasses.field(default_factory=list)  # empty: the standard-library corpus
    output_dir: str = "runs/quickstart"
    vocab: str | None = None  # None: learn one on the corpus
    vocab_size: int = 8000
    lowercase: bool = True
    preset: str = "bert_tiny"
    dropout: float | None = 0.0  # hidden and attention dropout; None: the preset's (BERT: 0.1)
    sentence_task: str = "nsp"
    max_seq_length: int = 64
    max_predictions: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 20
    whole_word_masking: bool = False
    max_ngram: int = 1  # ALBERT masks n-grams up to 3
    masking: str = "dynamic"  # or "static": masked once per dupe and written as TFRecords
    num_shards: int = 4  # static masking's TFRecord shards
    compression: str | None = None  # static masking's TFRecords: None, "GZIP" or "ZLIB"
    batch_size: int = 64
    steps: int = 2200
    steps_per_epoch: int = 440  # a backup (for resuming) and a point on the curves each
    checkpoint_every: int = 500  # steps between kept checkpoints (output_dir/checkpoints)
    keep_checkpoints: int = 3
    learning_rate: float = 2e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clipnorm: float = 1.0
    gradient_accumulation_steps: int | None = None
    dtype: str = "float32"
    strategy: str = "auto"
    jit_compile: bool = True
    eval_fraction: float = 0.05
    seed: int = 0
    init_checkpoint: str | None = None  # a pretrainer's .weights.h5 to start from (a later phase)
    # Phases run one after another, each a dict of overrides, each starting from the weights the
    # one before ended with, in output_dir/phase1, phase2, ... The paper's schedule (Devlin et
    # al., 2019, Appendix A.2): [{"max_seq_length": 128, "max_predictions": 20, "steps": 900000},
    #                            {"max_seq_length": 512, "max_predictions": 80, "steps": 100000}]
    phases: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        choices = {"sentence_task": ("nsp", "sop"), "masking": ("dynamic", "static"),
                   "optimizer": ("adamw", "lamb"), "compression": (None, "GZIP", "ZLIB"),
                   "dtype": ("float32", "mixed_float16", "mixed_bfloat16")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not one of {allowed}.")
        if self.max_ngram < 1 or self.dupe_factor < 1 or self.steps < 1:
            raise ValueError("max_ngram, dupe_factor and steps must be at least 1.")
        if self.steps % self.steps_per_epoch:
            raise ValueError(f"steps={self.steps} is not a multiple of steps_per_epoch={self.steps_per_epoch}; "
                             "change one so that the run ends where the learning-rate schedule does.")

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def _vocabulary(config, corpus_files):
    from keras_bert_lib.text import learn_vocabulary

    if config.vocab:
        return config.vocab
    path = os.path.join(config.output_dir, "vocab.txt")
    if not os.path.isfile(path):
        logger.info("Learning a %d-token vocabulary on %s", config.vocab_size, corpus_files)
        learn_vocabulary(corpus_files, config.vocab_size, config.lowercase, output=path)
    return path


def _datasets(config, tokenizer):
    import tensorflow as tf

    from keras_bert_lib.data import create_instances, pack_instances, read_documents, tokenize_documents
    from keras_bert_lib.data.masking import mask_tokens
    from keras_bert_lib.text import build_stdlib_corpus

    files = config.corpus or [build_stdlib_corpus()]
    documents = tokenize_documents(read_documents(files), tokenizer)
    rng = np.random.default_rng(config.seed)
    order = rng.permutation(len(documents))
    n_eval = max(2, int(len(documents) * config.eval_fraction))
    held_out = [documents[i] for i in order[:n_eval]]
    train = [documents[i] for i in order[n_eval:]]
    make = lambda docs, dupe, seed: pack_instances(  # noqa: E731
        create_instances(docs, config.max_seq_length, config.short_seq_prob, config.sentence_task,
                         dupe, seed), config.max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    train_arrays, eval_arrays = make(train, config.dupe_factor, config.seed), make(held_out, config.dupe_factor, config.seed + 1)
    continuation = np.array([t.startswith("##") for t in tokenizer.vocabulary])
    specials = [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id]

    def to_model(arrays):
        features = {k: arrays[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        return features, arrays["labels"]

    def masked(features, labels):
        starts = ~tf.gather(continuation, features["token_ids"]) if config.whole_word_masking else None
        inputs, y, w = mask_tokens(features, tokenizer.vocabulary_size(), tokenizer.mask_id, specials,
                                   config.max_predictions, config.masked_lm_prob, word_starts=starts,
                                   max_ngram=config.max_ngram)
        y["nsp_logits"], w["nsp_logits"] = labels, tf.ones_like(labels, tf.float32)
        return inputs, y, w

    instances = tf.data.Dataset.from_tensor_slices(to_model(train_arrays))
    if config.masking == "static":
        train_ds = _static_masking(config, instances, masked, continuation)
    else:  # a new mask each time an instance is read
        train_ds = (instances.shuffle(len(train_arrays["labels"]), seed=config.seed).repeat()
                    .batch(config.batch_size, drop_remainder=True)  # static shapes for XLA and TPUs
                    .map(masked, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
    # The held-out masks are drawn once, the same every run: eagerly, as graph-mode seeds of
    # tensorflow-text's selectors changed from one process to the next.
    tf.random.set_seed(config.seed)
    eval_batches = [masked(*b) for b in tf.data.Dataset.from_tensor_slices(to_model(eval_arrays))
                    .batch(config.batch_size)]
    if not eval_batches:
        raise ValueError(f"The held-out documents ({n_eval}) gave no instance; use a larger corpus "
                         "or a larger eval_fraction.")
    eval_ds = tf.data.Dataset.from_tensor_slices(
        tuple({k: tf.concat([b[i][k] for b in eval_batches], 0) for k in eval_batches[0][i]} for i in range(3))
    ).batch(config.batch_size)
    stats = {"train_instances": len(train_arrays["labels"]), "eval_instances": len(eval_arrays["labels"]),
             "documents": len(documents)}
    return train_ds, eval_ds, train_arrays, stats


# What the static records depend on: a run that changes one of these cannot reuse them.
_DATA_FIELDS = ("corpus", "vocab", "vocab_size", "lowercase", "sentence_task", "max_seq_length", "max_predictions",
                "masked_lm_prob", "short_seq_prob", "dupe_factor", "whole_word_masking", "max_ngram",
                "eval_fraction", "seed", "num_shards", "compression")


def _static_masking(config, instances, masked, continuation):
    """Google's static masking: each instance (already `dupe_factor` times, each cut anew) masked
    once and written as TFRecords in Google's format under `output_dir/pretraining_data`; a later
    run with the same output_dir reads the same files. ALBERT's (SOP) files carry `token_boundary`."""
    import glob

    import tensorflow as tf

    from keras_bert_lib.data.tfrecords import read_pretraining_tfrecords, write_pretraining_tfrecords

    folder = os.path.join(config.output_dir, "pretraining_data")
    prefix, albert = os.path.join(folder, "train"), config.sentence_task == "sop"
    made_by = {k: getattr(config, k) for k in _DATA_FIELDS}
    if glob.glob(prefix + "-*.tfrecord"):
        with open(os.path.join(folder, "made_by.json"), encoding="utf-8") as f:
            before = json.load(f)
        changed = {k: (before.get(k), v) for k, v in made_by.items() if before.get(k) != v}
        if changed:
            raise ValueError(f"{folder} holds records made with other settings {changed} (was, now); "
                             "use another output_dir, or delete that folder to write them again.")
    else:
        def with_boundary(inputs, labels, weights):
            if albert:  # 1 where a word begins, as ALBERT's create_pretraining_data.py writes it
                starts = ~tf.gather(continuation, inputs["token_ids"]) & tf.cast(inputs["padding_mask"], tf.bool)
                inputs = {**inputs, "token_boundary": tf.cast(starts, tf.int32)}
            return inputs, labels, weights

        tf.random.set_seed(config.seed)
        batches = instances.batch(1024).map(masked).map(with_boundary).as_numpy_iterator()
        write_pretraining_tfrecords(batches, prefix, config.num_shards, config.compression)
        atomic_write_text(os.path.join(folder, "made_by.json"), json.dumps(made_by, indent=2))
    return read_pretraining_tfrecords(prefix + "-*.tfrecord", config.max_seq_length, config.max_predictions,
                                      config.batch_size, config.compression, seed=config.seed,
                                      albert=albert).repeat()


def _baselines(train_arrays, eval_ds):
    """Most-frequent-token MLM accuracy and always-IsNext NSP accuracy on the held-out set."""
    ids = train_arrays["token_ids"][train_arrays["padding_mask"].astype(bool)]
    counts = np.bincount(ids)
    counts[:5] = 0  # never predict a special token
    most_frequent = int(np.argmax(counts))
    labels, weights, nsp = [], [], []
    for _, y, w in eval_ds:
        labels.append(y["mlm_logits"].numpy()), weights.append(w["mlm_logits"].numpy())
        nsp.append(y["nsp_logits"].numpy())
    labels, weights = np.concatenate(labels), np.concatenate(weights)
    mlm = float(((labels == most_frequent) * weights).sum() / weights.sum())
    return {"mlm_most_frequent_token": mlm, "nsp_always_is_next": float(np.mean(np.concatenate(nsp) == 0))}


def plot_curves(history, path, baselines=None, steps_per_epoch=1):
    """Loss and accuracy curves as a PNG (matplotlib, headless): each metric one colour, training
    solid and held-out (`val_` keys) dashed, the baselines as grey lines.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.training.pretrain import plot_curves
        plot_curves({"loss": [3.0, 2.0], "val_loss": [3.1, 2.2], "mlm_logits_accuracy": [0.1, 0.2]},
                    os.path.join(tempfile.mkdtemp(), "c.png"), steps_per_epoch=100)
        ```
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = sorted({k.removeprefix("val_") for k in history})
    for key in sorted(history):
        name = key.removeprefix("val_")
        target = left if "loss" in name else right if "accuracy" in name else None
        if target is not None:
            held_out = key.startswith("val_")
            steps = [steps_per_epoch * (i + 1) for i in range(len(history[key]))]
            target.plot(steps, history[key], "--" if held_out else "-", marker=".", color=f"C{names.index(name)}",
                        label=("held-out " if held_out else "train ") + name.replace("_logits", ""))
    for name, value in (baselines or {}).items():
        right.axhline(value, linestyle=":", linewidth=1, color="grey")
        right.text(steps_per_epoch, value, name, fontsize=7, va="bottom")
    xlabel = "step" if steps_per_epoch > 1 else "epoch"
    left.set(title="loss", xlabel=xlabel)
    right.set(title="accuracy", xlabel=xlabel, ylim=(0, 1))
    for ax in (left, right):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_pretraining(config: PretrainConfig):
    """Pre-trains a BertPretrainer as `config` says; returns the held-out report (a dict).

    Resumable: killed and started again with the same config, it continues from its last
    epoch's backup (`BackupAndRestore` in `output_dir/backup`). A NaN or Inf loss stops it with
    a FloatingPointError and the earlier backup kept. At the end it writes `report.json`,
    `curves.png`, TensorBoard logs, the pretrainer as `pretrainer.keras` and the encoder in
    HuggingFace format under `export/`.

    Example:
        ```python
        from keras_bert_lib.training.pretrain import PretrainConfig, run_pretraining
        # run_pretraining(PretrainConfig(steps=100))   # minutes; see the README's main job
        ```
    """
    import keras

    from keras_bert_lib import BertPretrainer, build_encoder, save_checkpoint
    from keras_bert_lib.text import WordPieceTokenizer, build_stdlib_corpus
    from keras_bert_lib.training import PeriodicCheckpoints, StopOnNonFiniteLoss, create_optimizer, create_strategy

    os.makedirs(config.output_dir, exist_ok=True)
    atomic_write_text(os.path.join(config.output_dir, "config.json"), config.to_json())
    if config.phases:
        return _run_phases(config)
    keras.utils.set_random_seed(config.seed)
    tokenizer = WordPieceTokenizer(_vocabulary(config, config.corpus or [build_stdlib_corpus()]),
                                   lowercase=config.lowercase)
    train_ds, eval_ds, train_arrays, stats = _datasets(config, tokenizer)
    baselines = _baselines(train_arrays, eval_ds)

    strategy = create_strategy(config.strategy)
    with strategy.scope():
        encoder = build_encoder(_encoder_config(config, tokenizer), dtype=config.dtype)
        pretrainer = BertPretrainer(encoder, sentence_task=config.sentence_task)
        if config.init_checkpoint:
            try:
                pretrainer.load_weights(config.init_checkpoint)
            except ValueError as e:
                raise ValueError(
                    f"init_checkpoint {config.init_checkpoint} does not fit this pretrainer (preset "
                    f"{config.preset}, {tokenizer.vocabulary_size()} tokens, {config.sentence_task}): use "
                    f"the preset, vocabulary and sentence task of the run that wrote it. Keras said: {e}") from None
        optimizer = create_optimizer(config.optimizer, config.learning_rate, config.warmup_steps,
                                     config.steps, config.weight_decay, config.clipnorm,
                                     config.gradient_accumulation_steps,
                                     loss_scale=config.dtype == "mixed_float16")
        pretrainer.compile(optimizer=optimizer, jit_compile=_jit_compile(config, strategy))
    backup, history_csv = os.path.join(config.output_dir, "backup"), os.path.join(config.output_dir, "history.csv")
    if not os.path.isdir(backup) and os.path.isfile(history_csv):
        os.remove(history_csv)  # a new run, not a resumed one: its curves start again
    callbacks = [
        StopOnNonFiniteLoss(),  # first: a bad step must never reach a checkpoint
        keras.callbacks.BackupAndRestore(backup),
        PeriodicCheckpoints(os.path.join(config.output_dir, "checkpoints"), config.checkpoint_every,
                            config.keep_checkpoints),
        keras.callbacks.TensorBoard(os.path.join(config.output_dir, "logs"), update_freq=config.steps_per_epoch),
        keras.callbacks.CSVLogger(history_csv, append=True),
    ]
    epochs = max(1, config.steps // config.steps_per_epoch)
    fitted = pretrainer.fit(train_ds, epochs=epochs, steps_per_epoch=config.steps_per_epoch,
                            validation_data=eval_ds, callbacks=callbacks, verbose=2)
    # The last epoch's validation ran on the final weights: that is the held-out report. Evaluated
    # anew only when this call trained no epoch (killed after its last epoch, before the end).
    results = ({k.removeprefix("val_"): v[-1] for k, v in fitted.history.items() if k.startswith("val_")}
               or pretrainer.evaluate(eval_ds, return_dict=True, verbose=0))
    history = _read_history(history_csv)
    report = {
        "held_out": {k: float(v) for k, v in results.items()}, "baselines": baselines, **stats,
        "steps": int(pretrainer.optimizer.iterations.numpy()),
    }
    atomic_write_text(os.path.join(config.output_dir, "report.json"), json.dumps(report, indent=2))
    plot_curves(history, os.path.join(config.output_dir, "curves.png"), {
        "most-frequent-token": baselines["mlm_most_frequent_token"],
        "always IsNext": baselines["nsp_always_is_next"]}, config.steps_per_epoch)
    for name in ("pretrainer.keras", "pretrainer.weights.h5"):  # whole, or rename, never half written
        partial = os.path.join(config.output_dir, "partial-" + name)
        pretrainer.save(partial) if name.endswith(".keras") else pretrainer.save_weights(partial)
        os.replace(partial, os.path.join(config.output_dir, name))
    if config.dtype == "float32":
        export = os.path.join(config.output_dir, "export")
        save_checkpoint(pretrainer, export, format="hf")
        atomic_write_text(os.path.join(export, "vocab.txt"), "\n".join(tokenizer.vocabulary) + "\n")
    return report


def _run_phases(config):
    """Each phase in its own folder, on the first phase's vocabulary, from the last one's weights.
    A phase that finished (its report.json exists) is not run again when the command is."""
    reports, init, vocab = [], config.init_checkpoint, config.vocab
    for i, overrides in enumerate(config.phases, 1):
        phase = dataclasses.replace(config, **{"init_checkpoint": init, "vocab": vocab, **overrides,
                                               "phases": [], "output_dir": os.path.join(config.output_dir, f"phase{i}")})
        report_path = os.path.join(phase.output_dir, "report.json")
        if os.path.isfile(report_path):
            with open(report_path, encoding="utf-8") as f:
                reports.append(json.load(f))
        else:
            reports.append(run_pretraining(phase))
        init, vocab = os.path.join(phase.output_dir, "pretrainer.weights.h5"), _vocabulary(phase, None)
    report = {**reports[-1], "phases": reports}
    atomic_write_text(os.path.join(config.output_dir, "report.json"), json.dumps(report, indent=2))
    return report


def _encoder_config(config, tokenizer):
    from keras_bert_lib import PRESETS

    changes = {"vocab_size": tokenizer.vocabulary_size()}
    if config.dropout is not None:
        changes.update(hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout)
    return PRESETS[config.preset].replace(**changes)


def _jit_compile(config, strategy):
    """XLA unless several replicas share the CPU: XLA cannot place one program over logical CPUs."""
    import tensorflow as tf

    if config.jit_compile and strategy.num_replicas_in_sync > 1 and not tf.config.list_logical_devices("GPU"):
        logger.warning("XLA is off: %d replicas on CPUs (XLA reads variables across logical CPU "
                       "devices and fails; on GPUs and TPUs it stays on).", strategy.num_replicas_in_sync)
        return False
    return config.jit_compile


def _read_history(path):
    import csv

    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keys = [k for k in (rows[0] if rows else {}) if k != "epoch" and rows[0][k] != "NA"]
    return {k: [float(r[k]) for r in rows] for k in keys}
