"""The fine-tuning runs: checkpoint folder + labelled files → a task model that takes raw strings.

    classify  labelled texts or text pairs              → TextClassifier  (accuracy, F1, Matthews)
    embed     (anchor, positive) pairs, a dual encoder   → SentenceEmbedder (recall@k, MRR@10)
    rerank    labelled (query, passage) pairs            → CrossEncoder    (MRR@10, accuracy)
    squad     SQuAD v1.1 / v2.0 JSON                     → SpanQuestionAnswerer (exact match, F1)
    ner       words and tags (CoNLL columns, JSONL)      → TokenClassifier (entity P/R/F1; POS: accuracy)

`keras-bert finetune TASK [--recipe recipes/....toml]` is thin over `run_finetuning`. Defaults are
BERT's (Devlin et al., 2019, §4.1 and Google's run_classifier.py): length 128, batch 32, lr 5e-5,
3 epochs, 10% warm-up, AdamW with decay 0.01 except on LayerNorm and biases, clipping at 1.0.
"""

import dataclasses
import json
import logging
import os

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.data import label_classes, read_examples, read_tfds
from keras_bert_lib.metrics import classification_metrics, mrr_at_k, recall_at_k
from keras_bert_lib.runs.finetune_spans import _Ner, _Squad
from keras_bert_lib.models import CrossEncoder, SentenceEmbedder, TextClassifier, load_checkpoint, save_checkpoint
from keras_bert_lib.text import load_preprocessor, write_vocabulary
from keras_bert_lib.training.loop import LoopConfig, cli_flag, option, prepare_output_dir, train

logger = logging.getLogger(__name__)
TASKS = ("classify", "embed", "rerank", "squad", "ner")


@dataclasses.dataclass(frozen=True)
class EpochConfig(LoopConfig):
    """The settings of a run over a labelled file, counted in epochs (fine-tuning, distillation):
    BERT's defaults, the steps derived from the data unless given.

    Example:
        ```python
        from keras_bert_lib.runs.finetune import EpochConfig
        config = EpochConfig(epochs=2, batch_size=16)
        ```
    """

    batch_size: int = option(32, "examples per step")
    epochs: int = option(3, "passes over the training data")
    warmup_fraction: float = option(0.1, "share of the steps with linear warm-up")
    dropout: float = option(0.1, "dropout before the classification head")
    learning_rate: float = option(5e-5, "peak learning rate")
    steps: int | None = option(None, "optimizer steps in all; 'none': epochs x the batches in the training data")
    steps_per_epoch: int | None = option(None, "steps between backups, held-out evaluations and curve points; "
                                               "'none': one pass over the training data")
    warmup_steps: int | None = option(None, "steps of linear warm-up; 'none': warmup_fraction of the steps")
    checkpoint_every: int = option(1000, "steps between kept checkpoints (output_dir/checkpoints)")

    def __post_init__(self):
        super().__post_init__()
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} ({cli_flag(name)}) must be at least 1.")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction={self.warmup_fraction} (--warmup-fraction) must be in [0, 1).")

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


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(EpochConfig):
    """Everything a fine-tuning run reads; saved as `config.json`. BERT's defaults.

    Example:
        ```python
        from keras_bert_lib.runs import FinetuneConfig
        config = FinetuneConfig(checkpoint="minilm/", train="train.csv", validation="dev.csv")
        ```
    """

    task: str = option("classify", "classify: labelled texts or pairs; embed: a dual encoder on (anchor, "
                                   "positive) pairs; rerank: a cross-encoder on labelled (query, passage) pairs; "
                                   "squad: answer spans (SQuAD JSON); ner: a tag per word (CoNLL or JSONL)",
                       choices=TASKS)
    checkpoint: str | None = option(None, "the checkpoint folder to start from (Google TF1 or HuggingFace, "
                                          "with its vocab.txt)", input_path=True)
    train: str | None = option(None, "training file: .csv, .tsv or .jsonl", input_path=True)
    validation: str | None = option(None, "validation file, the same columns; its numbers go in report.json",
                                      input_path=True)
    tfds: str | None = option(None, "a TFDS data set instead of the files, e.g. glue/sst2 (needs the [tfds] extra)")
    tfds_splits: list = option(["train", "validation"], "the TFDS training and validation splits")
    text_column: str = option("text", "column of the text (embed: the anchor; rerank: the query)")
    text_pair_column: str = option("text_pair", "column of the second text of a pair (embed: the positive; "
                                                "rerank: the passage); classify reads pairs when the file has it")
    label_column: str = option("label", "column of the label (rerank: 1 relevant, 0 not)")
    negative_column: str | None = option(None, "embed: column of a hard negative for each training pair, "
                                               "scored next to the in-batch negatives; 'none': in-batch only")
    max_seq_length: int = option(128, "tokens per text or pair, [CLS] and [SEP]s included (squad: per "
                                      "window of question and context; run_squad.py used 384)")
    max_query_length: int = option(64, "squad: word pieces kept of each question")
    doc_stride: int = option(128, "squad: word pieces between the starts of a long context's windows "
                                  "(HuggingFace's stride is the overlap instead)")
    max_answer_length: int = option(30, "squad: the longest answer, in word pieces")
    version_2: bool = option(False, "squad: SQuAD v2.0, where no answer wins past the threshold")
    null_score_diff_threshold: float = option(0.0, "squad v2.0: how much the [CLS] score must beat the best "
                                                   "span's for no answer")
    word_column: int = option(0, "ner: the CoNLL column of the word")
    tag_column: int = option(-1, "ner: the CoNLL column of the tag (-1: the last)")
    lowercase: bool | None = option(None, "lower-case the text; 'none': as the checkpoint's files say")
    pooling: str = option("cls", "classify and rerank: the [CLS] pooler, or the mean over tokens (models "
                                 "trained for mean pooling such as all-MiniLM-L6-v2)", choices=("cls", "mean"))
    trainable_blocks: int | None = option(None, "train the whole encoder ('none'), its top k blocks (k), or "
                                                "only the head (0)")
    output_dir: str = option("runs/finetune", "folder for the config, checkpoints, logs, curves, report, "
                                              "model.keras and the HuggingFace export")

    def __post_init__(self):
        super().__post_init__()
        if self.checkpoint is None:
            raise ValueError("checkpoint is required: the folder of the pre-trained encoder to fine-tune (--checkpoint).")
        if (self.train is None) == (self.tfds is None):
            raise ValueError("Give the data as --train FILE --validation FILE, or as --tfds NAME, not both or neither.")
        if self.train is not None and self.validation is None:
            raise ValueError("--validation FILE is required with --train: the run reports held-out numbers.")


def _examples(config):
    """(train, validation) Examples, checked before anything is built."""
    if config.task in SPAN_TASKS and (config.tfds or config.negative_column):
        raise ValueError(f"A {config.task} run reads --train and --validation files "
                         f"({'SQuAD JSON' if config.task == 'squad' else 'CoNLL columns or JSONL'}); "
                         "--tfds and --negative-column are for the other tasks.")
    if config.negative_column and (config.task != "embed" or config.tfds):
        raise ValueError("--negative-column names a column of an embed run's training file (hard negatives of "
                         f"a dual encoder); this {config.task} run {'reads TFDS' if config.tfds else 'takes labelled rows'}.")
    if config.tfds:
        return tuple(read_tfds(config.tfds, split) for split in config.tfds_splits)
    missing = [p for p in (config.checkpoint, config.train, config.validation) if not os.path.exists(p)]
    if missing:
        raise ValueError(f"No such file or folder: {', '.join(missing)}. Nothing was written.")
    if config.task in SPAN_TASKS:
        return None, None  # the task reads its own files (runs/finetune_spans.py)
    columns = dict(text_column=config.text_column, text_pair_column=config.text_pair_column,
                   label_column=config.label_column)
    pairs = {"classify": None, "embed": True, "rerank": True}[config.task]
    train_set = read_examples(config.train, **columns, pairs=pairs, labelled=config.task != "embed",
                              negative_column=config.negative_column)
    validation = read_examples(config.validation, **columns, pairs=train_set.pairs is not None,
                               labelled=config.task != "embed")
    return train_set, validation


def _texts(examples):
    return examples.texts if examples.pairs is None else (examples.texts, examples.pairs)


def _dataset(features, labels, preprocessor, batch_size, training, seed):
    """Batches of (ids, label): texts or (texts, second texts), tokenized in the pipeline. Training
    data is shuffled anew each pass, repeated, and cut into full batches (static shapes for XLA)."""
    data = tf.data.Dataset.from_tensor_slices((features, labels))
    if training:
        data = data.shuffle(len(labels), seed=seed).repeat()
    data = data.batch(batch_size, drop_remainder=training)

    @tf.autograph.experimental.do_not_convert
    def tokenize(texts, label):
        return preprocessor(tuple(texts) if isinstance(texts, (tuple, list)) else texts), label

    return data.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _pair_batches(examples, preprocessor, batch_size, training, seed):
    """Full batches of (anchor, positive[, hard negative]) rows, each column tokenized, stacked for
    InBatchNegativesLoss (every other positive of the batch, and every hard negative, is a negative)."""
    columns = (examples.texts, examples.pairs) + ((examples.negatives,) if examples.negatives and training else ())
    data = tf.data.Dataset.from_tensor_slices(columns)
    if training:
        data = data.shuffle(len(examples), seed=seed).repeat()

    @tf.autograph.experimental.do_not_convert
    def stack(*texts):
        parts = [preprocessor(t) for t in texts]
        return {k: tf.concat([p[k] for p in parts], 0) for k in parts[0]}, tf.zeros((tf.shape(texts[0])[0], len(texts)))

    data = data.batch(batch_size, drop_remainder=True)
    return data.map(stack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def run_finetuning(config: FinetuneConfig):
    """Fine-tunes `config.checkpoint` on the task's data; returns the held-out report (a dict).

    Every file and column is checked first. The run is resumable and a finished one is not
    trained again (see `LoopConfig`). At the end it writes `report.json` (the validation metrics
    under plain names, next to `baselines`), `curves.png`, `model.keras` (raw strings in) and
    under `export/` a HuggingFace checkpoint with its `vocab.txt` (`BertForSequenceClassification`
    for a classifier or a re-ranker, the encoder for an embedder).

    Example:
        ```python
        from keras_bert_lib.runs import FinetuneConfig, run_finetuning
        # run_finetuning(FinetuneConfig(checkpoint="minilm/", train="train.csv", validation="dev.csv"))
        ```
    """
    train_set, validation = _examples(config)
    preprocessor = load_preprocessor(config.checkpoint, sequence_length=config.max_seq_length,
                                     lowercase=config.lowercase)
    if config.task in SPAN_TASKS:
        task = SPAN_TASKS[config.task](config, preprocessor)  # reads and checks its files
        size, examples, held_out_examples = task.size, task.train_examples, len(task.validation)
    else:
        task = _TASKS[config.task](config, train_set, validation, preprocessor)  # checks the labels
        size, examples, held_out_examples = len(train_set), len(train_set), len(validation)
    # Resolved before anything is written: a steps_per_epoch that does not divide the steps fails here.
    loop = config.resolved(size, config.train or config.tfds)
    finished = prepare_output_dir(config)
    if finished is not None:
        return finished
    import keras

    keras.utils.set_random_seed(config.seed)
    model, _ = train(loop, task.build, task.train_data, task.held_out, baselines=task.curve_baselines)
    report = {"held_out": task.evaluate(model), "baselines": task.baselines, "steps": loop.steps,
              "train_examples": examples, "validation_examples": held_out_examples}
    _save(config, model, preprocessor)
    atomic_write_text(os.path.join(config.output_dir, "report.json"), json.dumps(report, indent=2))
    return report


def _save(config, model, preprocessor):
    """model.keras (the preprocessor inside, so it takes raw strings) and the HuggingFace export."""
    partial = os.path.join(config.output_dir, "partial-model.keras")
    model.save(partial)
    os.replace(partial, os.path.join(config.output_dir, "model.keras"))
    export = os.path.join(config.output_dir, "export")
    try:
        save_checkpoint(model, export, format="hf")
    except ValueError as e:  # e.g. a mean-pooling classifier: no HuggingFace class computes it
        logger.warning("No HuggingFace export: %s", e)
        return
    tokenizer = preprocessor.tokenizer
    write_vocabulary(tokenizer.vocabulary, os.path.join(export, "vocab.txt"))
    atomic_write_text(os.path.join(export, "tokenizer_config.json"),
                      json.dumps({"do_lower_case": tokenizer.lowercase, "tokenizer_class": "BertTokenizer",
                                  "model_max_length": preprocessor.sequence_length}))


class _Classify:
    def __init__(self, config, train_set, validation, preprocessor):
        self.config, self.preprocessor = config, preprocessor
        self.names, (train_ids, self.validation_ids) = label_classes(train_set, validation)
        if len(self.names) < 2:
            raise ValueError(f"{train_set.source} has one label only ({self.names[0]!r}); a classifier needs two or more.")
        self.train_data = _dataset(_texts(train_set), train_ids, preprocessor, config.batch_size, True, config.seed)
        self.held_out = _dataset(_texts(validation), self.validation_ids, preprocessor, config.batch_size, False,
                                 config.seed)
        majority = np.bincount(train_ids, minlength=len(self.names)).argmax()
        self.baselines = {"majority class": float(np.mean(self.validation_ids == majority))}
        self.curve_baselines = self.baselines

    def build(self):
        c = self.config
        return TextClassifier(load_checkpoint(c.checkpoint), len(self.names), preprocessor=self.preprocessor,
                              dropout=c.dropout, pooling=c.pooling, class_names=self.names,
                              trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        predicted = np.argmax(model.predict(self.held_out, verbose=0), axis=-1)
        return classification_metrics(self.validation_ids, predicted, len(self.names))


class _Rerank(_Classify):
    def __init__(self, config, train_set, validation, preprocessor):
        self.config, self.preprocessor = config, preprocessor
        labels = []
        for examples in (train_set, validation):
            values = [str(v) for v in examples.labels]
            bad = next((i for i, v in enumerate(values) if v not in ("0", "1", "0.0", "1.0")), None)
            if bad is not None:
                raise ValueError(f"{examples.where(bad)}: the label {values[bad]!r} is not 0 or 1 (re-ranking "
                                 "labels say whether the passage is relevant to the query).")
            labels.append(np.array([float(v) for v in values], "float32"))
        self.validation_set, self.validation_ids = validation, labels[1]
        self.train_data = _dataset(_texts(train_set), labels[0], preprocessor, config.batch_size, True, config.seed)
        self.held_out = _dataset(_texts(validation), labels[1], preprocessor, config.batch_size, False, config.seed)
        self.baselines = {"mrr@10 in the file's order": _mrr_by_query(validation, -np.arange(len(validation), dtype=float))}
        self.curve_baselines = None

    def build(self):
        c = self.config
        return CrossEncoder(load_checkpoint(c.checkpoint), preprocessor=self.preprocessor, dropout=c.dropout,
                            pooling=c.pooling, trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        logits = np.asarray(model.predict(self.held_out, verbose=0), np.float64)
        accuracy = float(np.mean((logits > 0) == (self.validation_ids > 0.5)))
        return {"mrr@10": _mrr_by_query(self.validation_set, logits), "accuracy": accuracy}


def _mrr_by_query(examples, scores):
    """MRR@10 over the queries of labelled (query, passage) rows: each query's candidates are its
    rows, and its rank is that of its best-scored relevant passage. Queries without a relevant
    passage are left out."""
    by_query = {}
    for i, query in enumerate(examples.texts):
        by_query.setdefault(query, []).append(i)
    rows, relevant = [], []
    width = max(len(v) for v in by_query.values())
    for query, indices in by_query.items():
        good = [i for i in indices if float(examples.labels[i]) > 0.5]
        if good:
            row = np.full(width, -np.inf)
            row[:len(indices)] = scores[indices]
            rows.append(row)
            relevant.append(indices.index(max(good, key=lambda i: scores[i])))
    return mrr_at_k(np.array(rows), relevant, k=10) if rows else float("nan")


class _Embed:
    def __init__(self, config, train_set, validation, preprocessor):
        self.config, self.preprocessor, self.validation = config, preprocessor, validation
        if len(validation) < config.batch_size:
            raise ValueError(f"{validation.source} has {len(validation)} pairs, fewer than one batch of "
                             f"{config.batch_size}; in-batch negatives need full batches.")
        self.train_data = _pair_batches(train_set, preprocessor, config.batch_size, True, config.seed)
        self.held_out = _pair_batches(validation, preprocessor, config.batch_size, False, config.seed)
        self.baselines, self.curve_baselines = {}, None

    def build(self):
        return SentenceEmbedder(load_checkpoint(self.config.checkpoint), preprocessor=self.preprocessor,
                                trainable_blocks=self.config.trainable_blocks)

    def evaluate(self, model):
        return retrieval_metrics(model, self.validation.texts, self.validation.pairs, self.config.batch_size)


def retrieval_metrics(embedder, queries, answers, batch_size=32):
    """Each query retrieves among all the answers: recall@1, @5, @10 and MRR@10 of its own.

    Example:
        ```python
        from keras_bert_lib.runs.finetune import retrieval_metrics
        # retrieval_metrics(embedder, ["what is ai?"], ["AI is ..."])
        ```
    """
    q = embedder.predict(list(queries), batch_size=batch_size, verbose=0)
    a = embedder.predict(list(answers), batch_size=batch_size, verbose=0)
    scores, relevant = q @ a.T, np.arange(len(q))
    return {**{f"recall@{k}": recall_at_k(scores, relevant, k) for k in (1, 5, 10)},
            "mrr@10": mrr_at_k(scores, relevant, 10)}


_TASKS = {"classify": _Classify, "embed": _Embed, "rerank": _Rerank}
SPAN_TASKS = {"squad": _Squad, "ner": _Ner}
