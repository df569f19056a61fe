"""The distillation run: a fine-tuned classifier (the teacher) → a shallower student of it.

`keras-bert distill --teacher runs/finetune/model.keras --train texts.csv --validation dev.csv`
builds a student from chosen teacher layers (`student_from_teacher`; by default half of them,
spread as DistilBERT's 0, 2, 4, 7, 9, 11 of 12), labels the training texts with the teacher's
logits once, and trains the student on them (`DistillationLoss`: KL divergence at temperature T,
times T², mixed with cross-entropy on the hard labels where the file has some). Texts without
labels are enough. The loop, resuming, curves, report and exports are fine-tuning's.
"""

import dataclasses
import io
import os

import keras
import numpy as np

import keras_bert_lib.text  # noqa: F401  registers the preprocessor that a teacher's file names
from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.backend_check import require_tensorflow_for
from keras_bert_lib.data import read_examples, text_batches
from keras_bert_lib.distillation import DistillationLoss, distillation_targets, student_from_teacher
from keras_bert_lib.distillation.student import check_layers
from keras_bert_lib.metrics import classification_metrics
from keras_bert_lib.models import load_checkpoint
from keras_bert_lib.progress import progress_verbose
from keras_bert_lib.runs.finetune import save_run_model
from keras_bert_lib.tasks import TextClassifier
from keras_bert_lib.training.epoch_config import EpochConfig
from keras_bert_lib.training.loop import option, prepare_output_dir, run_lock, train, write_report


@dataclasses.dataclass(frozen=True)
class DistillConfig(EpochConfig):
    """Everything a distillation run reads; saved as `config.json`.

    Example:
        ```python
        from keras_bert_lib.runs import DistillConfig
        config = DistillConfig(teacher="runs/finetune/model.keras", train="texts.csv", validation="dev.csv")
        ```
    """

    teacher: str | None = option(None, "the fine-tuned classifier to distil: a `keras-bert finetune classify` "
                                       "run's folder or its model.keras", input_path=True)
    train: str | None = option(None, "training texts (.csv, .tsv or .jsonl); a label column is used where it "
                                     "has a value, empty cells and a file without one are labelled by the "
                                     "teacher alone", input_path=True)
    validation: str | None = option(None, "labelled validation file; the student's and the teacher's numbers "
                                          "go in report.json", input_path=True)
    student_layers: list | None = option(None, "the teacher's layers the student starts from, e.g. 0 2 5; "
                                               "'none': half of them spread evenly (12 layers: DistilBERT's "
                                               "0 2 4 7 9 11)")
    student_checkpoint: str | None = option(None, "take the student's layers and embeddings from this "
                                                  "checkpoint folder (e.g. the pre-trained encoder the teacher "
                                                  "was fine-tuned from) instead of the teacher; 'none': the "
                                                  "teacher's, with its classification head", input_path=True)
    dropout: float = option(0.1, "dropout before the student's classification head", within="[0, 1)")
    temperature: float = option(2.0, "softmax temperature T of the teacher's and the student's logits "
                                     "(DistilBERT: 2)")
    alpha: float = option(0.5, "weight of the soft targets where a text has a label, 1 - alpha on the label "
                               "(0: labels only)")
    text_column: str = option("text", "column of the text")
    text_pair_column: str = option("text_pair", "column of the second text, for a teacher of pairs")
    label_column: str = option("label", "column of the label (optional: the teacher labels every text)")
    output_dir: str = option("runs/distill", "folder for the config, teacher targets, checkpoints, logs, "
                                             "curves, report, model.keras and the HuggingFace export")

    def __post_init__(self):
        super().__post_init__()
        for name in ("teacher", "train", "validation"):
            if getattr(self, name) is None:
                raise ValueError(f"{name} is required (--{name}).")
        if self.temperature <= 0 or not 0 <= self.alpha <= 1:
            raise ValueError(f"temperature={self.temperature} must be > 0 and alpha={self.alpha} in [0, 1].")


def load_teacher(path):
    """The TextClassifier saved at `path` (a model.keras, or a run folder holding one).

    Example:
        ```python
        from keras_bert_lib.runs.distill import load_teacher
        # teacher = load_teacher("runs/finetune")
        ```
    """
    file = os.path.join(path, "model.keras") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise ValueError(f"No teacher at {path}: give a fine-tuning run's folder or its model.keras "
                         "(`keras-bert finetune classify` writes it).")
    from keras_bert_lib.export import load_model_file

    teacher, _ = load_model_file(file)  # its weights not drawn first; a file that is no model: one line
    if not isinstance(teacher, TextClassifier) or teacher.preprocessor is None or teacher.num_classes < 2:
        raise ValueError(f"{file} holds a {type(teacher).__name__}; distillation takes a TextClassifier of two or "
                         "more classes that reads raw text (a `keras-bert finetune classify` run's model).")
    return teacher


def _class_ids(examples, names, role):
    """Each label as the teacher's class index, -1 where there is none."""
    if examples.labels is None:
        return np.full(len(examples), -1, "int32")
    index = {name: i for i, name in enumerate(names)}
    ids = []
    for i, label in enumerate(examples.labels):
        if label is not None and str(label) not in index:
            raise ValueError(f"{examples.where(i)}: the label {str(label)!r} is not one of the teacher's classes "
                             f"({', '.join(names)}); fix the {role} file or leave the cell empty.")
        ids.append(-1 if label is None else index[str(label)])
    return np.array(ids, "int32")


def _teacher_targets(config, teacher, texts, ids, name):
    """The teacher's logits and the labels (`distillation_targets`), computed once per run folder."""
    path = os.path.join(config.output_dir, f"teacher_{name}.npy")
    if os.path.isfile(path):
        targets = np.load(path)
        if targets.shape[0] == len(ids):
            return targets
    targets = distillation_targets(teacher, texts, labels=ids, batch_size=config.batch_size, verbose=progress_verbose())
    buffer = io.BytesIO()
    np.save(buffer, targets)
    atomic_write_text(path, buffer.getvalue())
    return targets


def run_distillation(config: DistillConfig):
    """Distils `config.teacher` into a student; returns the held-out report (a dict).

    The report holds the student's held-out accuracy, F1 and Matthews correlation (`held_out`),
    the teacher's on the same file (`teacher`), the student's share of the teacher's accuracy,
    both parameter counts and the student's layers. Writes what a fine-tuning run writes
    (`model.keras` taking raw strings, the HuggingFace export, curves, logs), and the teacher's
    targets (`teacher_train.npy`, `teacher_validation.npy`) so that a resumed run does not label
    again.

    Example:
        ```python
        from keras_bert_lib.runs import DistillConfig, run_distillation
        # run_distillation(DistillConfig(teacher="runs/finetune", train="texts.csv", validation="dev.csv"))
        ```
    """
    require_tensorflow_for("Distillation runs", "keras-bert distill ...")
    for path in (config.train, config.validation, config.student_checkpoint):
        if path is not None and not os.path.exists(path):
            raise ValueError(f"No such file or folder: {path}. Nothing was written.")
    teacher = load_teacher(config.teacher)
    names = teacher.class_names or [str(i) for i in range(teacher.num_classes)]
    columns = dict(text_column=config.text_column, text_pair_column=config.text_pair_column,
                   label_column=config.label_column, pairs=None)
    train_set = read_examples(config.train, labelled=None, **columns)
    validation = read_examples(config.validation, **{**columns, "pairs": train_set.pairs is not None})
    train_ids, validation_ids = _class_ids(train_set, names, "training"), _class_ids(validation, names, "validation")
    base = load_checkpoint(config.student_checkpoint) if config.student_checkpoint else teacher.encoder
    if base.config.vocab_size != teacher.encoder.config.vocab_size:
        raise ValueError(f"{config.student_checkpoint} has {base.config.vocab_size} word pieces and the teacher "
                         f"{teacher.encoder.config.vocab_size}: the student reads the teacher's tokenization, so "
                         "start it from the checkpoint the teacher was fine-tuned from (or from the teacher).")
    layers = check_layers(config.student_layers, base.config.num_hidden_layers)
    loop = config.resolved(len(train_set), config.train)
    with run_lock(config.output_dir):
        return _distil(config, loop, teacher, base, layers, names, train_set, validation, train_ids, validation_ids)


def _distil(config, loop, teacher, base, layers, names, train_set, validation, train_ids, validation_ids):
    finished = prepare_output_dir(config)
    if finished is not None:
        return finished
    keras.utils.set_random_seed(config.seed)
    preprocessor = teacher.preprocessor
    targets = _teacher_targets(config, teacher, train_set.inputs, train_ids, "train")
    held_targets = _teacher_targets(config, teacher, validation.inputs, validation_ids, "validation")
    teacher_scores = classification_metrics(validation_ids, held_targets[:, :-1].argmax(-1), teacher.num_classes)
    train_data = text_batches(train_set.inputs, targets, preprocessor, config.batch_size, True, config.seed)
    held_out = text_batches(validation.inputs, held_targets, preprocessor, config.batch_size, False, config.seed)

    def build():
        student = TextClassifier(student_from_teacher(base, layers), teacher.num_classes, preprocessor=preprocessor,
                                 dropout=config.dropout, pooling=teacher.pooling, class_names=teacher.class_names)
        if config.student_checkpoint is None:  # the teacher's own head on the teacher's own pooler
            student.head.set_weights(teacher.head.get_weights())
        return student

    majority = float(np.mean(validation_ids == np.bincount(train_ids[train_ids >= 0], minlength=len(names)).argmax()))
    model, _ = train(loop, build, train_data, held_out, loss=DistillationLoss(config.temperature, config.alpha),
                     baselines={"teacher": teacher_scores["accuracy"]})
    predicted = np.argmax(model.predict(validation.inputs, verbose=0), axis=-1)
    held = classification_metrics(validation_ids, predicted, teacher.num_classes)
    report = {"held_out": held, "teacher": teacher_scores,
              "student / teacher accuracy": held["accuracy"] / teacher_scores["accuracy"],
              "student_layers": list(layers), "teacher_layers": teacher.encoder.config.num_hidden_layers,
              "parameters": {"student": model.count_params(), "teacher": teacher.count_params()},
              "baselines": {"majority class": majority}, "steps": loop.steps, "train_examples": len(train_set),
              "labelled_train_examples": int(np.sum(train_ids >= 0)), "validation_examples": len(validation)}
    save_run_model(config.output_dir, model, preprocessor)
    write_report(config.output_dir, report)
    return report
