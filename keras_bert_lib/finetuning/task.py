"""Task: what a fine-tuning task is, declared once, and the settings every task shares.

A task is one class with the attributes and methods below and one line in the registry
(`keras_bert_lib/finetuning/__init__.py`). `keras-bert finetune NAME`, its `--help`, the quick-start
and prediction on files all read the registry; nothing else lists the tasks.
"""

import abc
import dataclasses
from typing import ClassVar

from keras_bert_lib.data import read_splits
from keras_bert_lib.training.epoch_config import EpochConfig
from keras_bert_lib.training.loop import DTYPES, option


@dataclasses.dataclass(frozen=True)
class Serving:
    """What a task's export serves: the string inputs of the SavedModel's `serving_default` (the
    names of the request's fields) and its named outputs (`export.output_names`).

    Example:
        ```python
        from keras_bert_lib.finetuning import Serving
        Serving(inputs=("text",), outputs=("probabilities", "label"))
        ```
    """

    inputs: tuple
    outputs: tuple


def task_field(name):
    """The `task` field of a task's config: its name, fixed (config.json says which task ran).

    Example:
        ```python
        import dataclasses
        from keras_bert_lib.finetuning import FinetuneConfig, task_field

        @dataclasses.dataclass(frozen=True)
        class MyConfig(FinetuneConfig):
            task: str = task_field("mine")
        ```
    """
    return option(name, "the task; `keras-bert finetune TASK` sets it", choices=(name,))


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(EpochConfig):
    """The settings every fine-tuning task reads; each task's config (`Task.config_class`) adds
    its own. Saved as the run's `config.json`. BERT's defaults (see `EpochConfig`).

    Example:
        ```python
        from keras_bert_lib.finetuning import TASKS
        config = TASKS["classify"].config_class(checkpoint="minilm/", train="train.csv", validation="dev.csv")
        ```
    """

    task: str | None = option(None, "the task; `keras-bert finetune TASK` sets it")
    checkpoint: str | None = option(None, "the checkpoint folder to start from (Google TF1 or HuggingFace, "
                                          "with its vocab.txt)", input_path=True)
    train: str | None = option(None, "training file", input_path=True)
    validation: str | None = option(None, "validation file, read as the training file is; its numbers go in "
                                          "report.json", input_path=True)
    max_seq_length: int = option(128, "tokens per text or pair, [CLS] and [SEP]s included", within="[4, inf)")
    lowercase: bool | None = option(None, "lower-case the text; 'none': as the checkpoint's files say")
    trainable_blocks: int | None = option(None, "train the whole encoder ('none'), its top k blocks (k), or "
                                                "only the head (0)")
    output_dir: str = option("runs/finetune", "folder for the config, checkpoints, logs, curves, report, "
                                              "model.keras and the HuggingFace export")
    dtype: str = option("float32", "Keras dtype policy; 'auto': mixed_bfloat16 on CPUs with AVX512-BF16 or AMX for "
                                   "models at least 256 wide (steps 1.5 times faster; it learned less in short runs, "
                                   "see docs/finetuning.md), float32 elsewhere", choices=("auto", *DTYPES))

    def __post_init__(self):
        super().__post_init__()
        if self.checkpoint is None:
            raise ValueError("checkpoint is required: the folder of the pre-trained encoder to fine-tune "
                             "(--checkpoint).")
        self._check_data()

    def _check_data(self):
        if self.train is None or self.validation is None:
            raise ValueError("--train FILE and --validation FILE are required: the run trains on one and reports "
                             "held-out numbers on the other.")


@dataclasses.dataclass(frozen=True)
class TextsConfig(FinetuneConfig):
    """The settings of tasks on rows of texts (CSV, TSV, JSONL or a TFDS data set): the columns.

    Example:
        ```python
        from keras_bert_lib.finetuning.task import TextsConfig
        config = TextsConfig(checkpoint="ckpt/", tfds="glue/sst2")
        ```
    """

    train: str | None = option(None, "training file: .csv, .tsv or .jsonl", input_path=True)
    tfds: str | None = option(None, "a TFDS data set instead of the files, e.g. glue/sst2 (needs the [tfds] extra)")
    tfds_splits: list = option(["train", "validation"], "the TFDS training and validation splits")
    text_column: str = option("text", "column of the text")
    text_pair_column: str = option("text_pair", "column of the second text of a pair")
    label_column: str = option("label", "column of the label")

    def _check_data(self):
        if (self.train is None) == (self.tfds is None):
            raise ValueError("Give the data as --train FILE --validation FILE, or as --tfds NAME, not both or neither.")
        if self.train is not None and self.validation is None:
            raise ValueError("--validation FILE is required with --train: the run reports held-out numbers.")

    def read(self, pairs=None, labelled=True, negative_column=None):
        """(training, validation) `Examples` from the files or the TFDS data set (`read_splits`)."""
        return read_splits(self.train, self.validation, self.tfds, self.tfds_splits, pairs=pairs, labelled=labelled,
                           negative_column=negative_column, text_column=self.text_column,
                           text_pair_column=self.text_pair_column, label_column=self.label_column)


class Task(abc.ABC):
    """A fine-tuning task: the files it reads, the model it builds on an encoder, its held-out
    metrics, what one prediction row holds, and what its export serves.

    A subclass declares the class attributes and, in `__init__`, reads and checks its files
    (every error before anything is built or written) and sets the attributes the training loop
    reads: `train_data` (repeated training batches), `held_out` (one pass), `train_size` (the
    rows an epoch counts), `train_examples`, `validation_examples`, `baselines` (the report's
    reference numbers) and `curve_baselines` (lines on curves.png, or None).

    Attributes:
        name: the command's word, `keras-bert finetune NAME`.
        description: one line for `keras-bert finetune --help`.
        reads: the files it reads, for its `--help`.
        config_class: its settings, a `FinetuneConfig` subclass: its fields are its flags.
        model_class: the task model `build` returns.
        metrics: the names `evaluate` returns.
        serves: what its export serves (`Serving`).
        prediction_columns: the input columns of a prediction row; more than `serves.inputs`
            where a column is optional (a classifier's `text_pair`).
    Example:
        ```python
        from keras_bert_lib.finetuning import TASKS
        task = TASKS["ner"]
        task.metrics, task.serves.outputs   # ('precision', 'recall', 'f1', 'accuracy'), ('logits', 'tag_ids')
        ```
    """

    name: ClassVar[str]
    description: ClassVar[str]
    reads: ClassVar[str]
    config_class: ClassVar[type]
    model_class: ClassVar[type]
    metrics: ClassVar[tuple]
    serves: ClassVar[Serving]
    prediction_columns: ClassVar[tuple]

    def __init__(self, config, preprocessor):
        self.config, self.preprocessor = config, preprocessor
        self.train_data = self.held_out = None
        self.train_size = self.train_examples = self.validation_examples = 0
        self.baselines, self.curve_baselines = {}, None

    @abc.abstractmethod
    def build(self, encoder):
        """The task model on `encoder` (a `BertEncoder`), taking raw strings through the task's
        preprocessor."""

    @abc.abstractmethod
    def evaluate(self, model):
        """{metric: value} of `model` on the held-out data: the names in `metrics`."""

    def report(self, model, fitted):
        """The held-out numbers of the run's report: `evaluate(model)`, unless a task can read them
        from `fitted`, the results of the training loop's last held-out pass over every held-out
        example on the final weights (None where that pass left examples out)."""
        return self.evaluate(model)

    @classmethod
    @abc.abstractmethod
    def prediction_rows(cls, model, columns):
        """One dict per input row of `model`'s prediction: `columns` maps the names in
        `prediction_columns` to equal-length lists of strings."""


def group_by_length_option():
    """The `--group-by-length` setting of the tasks that train on batches of texts
    (`data.text_batches`): on by default (`--no-group-by-length` turns it off; transformers'
    Trainer has it off): it makes an epoch faster and learns as much (docs/finetuning.md,
    docs/benchmarks.md).

    Example:
        ```python
        import dataclasses
        from keras_bert_lib.finetuning.task import TextsConfig, group_by_length_option, task_field

        @dataclasses.dataclass(frozen=True)
        class MyConfig(TextsConfig):
            task: str = task_field("mine")
            group_by_length: bool = group_by_length_option()
        ```
    """
    return option(True, "put texts of similar length in the same training batches (sorted within windows of 32 "
                         "batches), as transformers' group_by_length; every batch is padded to its own longest "
                         "either way")
