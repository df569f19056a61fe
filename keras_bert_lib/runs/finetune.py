"""The fine-tuning run: a checkpoint folder + a task's files → a task model that takes raw strings.

`keras-bert finetune TASK [--recipe recipes/....toml]` is thin over `run_finetuning`; the tasks
(their files, models, metrics) are `keras_bert_lib.finetuning`'s registry. Defaults are BERT's
(Devlin et al., 2019, §4.1 and Google's run_classifier.py): length 128, batch 32, lr 5e-5,
3 epochs, 10% warm-up, AdamW with decay 0.01 except on LayerNorm and biases, clipping at 1.0.
"""

import dataclasses
import json
import logging
import os

import keras

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.checkpoints import read_checkpoint
from keras_bert_lib.checkpoints.hub import hub_id, resolve_checkpoint
from keras_bert_lib.finetuning import FinetuneConfig, get_task
from keras_bert_lib.models import load_checkpoint, save_checkpoint, save_model_file
from keras_bert_lib.runtime.compile_path import choose_training_dtype
from keras_bert_lib.text import WordPieceTokenizer, load_preprocessor, write_vocabulary
from keras_bert_lib.text.tokenizer_files import copy_tokenizer_files
from keras_bert_lib.training.loop import held_out_cut, prepare_output_dir, run_lock, train, write_report

logger = logging.getLogger(__name__)


def finetune_config(task, **fields):
    """The config of fine-tuning task `task` (its `config_class`) with `fields`; a field the task
    does not have fails naming it and the task's fields.

    Example:
        ```python
        from keras_bert_lib.runs import finetune_config
        config = finetune_config("ner", checkpoint="bert/", train="train.conll", validation="dev.conll")
        ```
    """
    config_class = get_task(task).config_class
    names = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"finetune {task} has no setting {', '.join(unknown)}; its settings: "
                         f"{', '.join(sorted(names))}.")
    return config_class(**{**fields, "task": task})


def _check_inputs(config):
    missing = [getattr(config, f.name) for f in dataclasses.fields(config)
               if f.metadata.get("input_path") and getattr(config, f.name) is not None
               and not os.path.exists(getattr(config, f.name))]
    if config.checkpoint in missing and hub_id(config.checkpoint):  # a HuggingFace Hub id: fetched, or cached
        resolve_checkpoint(config.checkpoint)  # offline and not cached: its own message, before anything is written
        missing.remove(config.checkpoint)
    if missing:
        raise ValueError(f"No such file or folder: {', '.join(missing)}. Nothing was written.")


def run_finetuning(config: FinetuneConfig):
    """Fine-tunes `config.checkpoint` on the task's data; returns the held-out report (a dict).

    `config` is a task's config (`finetune_config`, or `TASKS[name].config_class(...)`). Every
    file and column is checked first. The run is resumable and a finished one is not trained
    again (see `LoopConfig`). At the end it writes `report.json` (the task's held-out metrics
    under plain names, next to `baselines`), `curves.png`, `model.keras` (raw strings in) and,
    where HuggingFace has the model's class, a HuggingFace checkpoint with its `vocab.txt` under
    `export/`.

    Example:
        ```python
        from keras_bert_lib.runs import finetune_config, run_finetuning
        # run_finetuning(finetune_config("classify", checkpoint="minilm/", train="train.csv", validation="dev.csv"))
        ```
    """
    task_class = get_task(config.task)
    if not isinstance(config, task_class.config_class):
        raise ValueError(f"A {config.task} run takes a {task_class.config_class.__name__}, not a "
                         f"{type(config).__name__}; build it with finetune_config({config.task!r}, ...).")
    _check_inputs(config)
    # Seeded before the tokenizer is built: seeding drops a SentencePiece BPE model's op (its docstring).
    keras.utils.set_random_seed(config.seed)
    preprocessor = load_preprocessor(config.checkpoint, sequence_length=config.max_seq_length,
                                     lowercase=config.lowercase)
    task = task_class(config, preprocessor)  # reads and checks its files
    # Resolved before anything is written: a steps_per_epoch that does not divide the steps fails here.
    loop = config.resolved(task.train_size, config.train or getattr(config, "tfds", None))
    with run_lock(config.output_dir):
        return _finetune(config, task, preprocessor, loop)


def _finetune(config, task, preprocessor, loop):
    finished = prepare_output_dir(config)
    if finished is not None:
        return finished
    if config.dtype == "auto":  # the width decides; this reads the checkpoint once more
        width = read_checkpoint(config.checkpoint).config.hidden_size
        loop = dataclasses.replace(loop, dtype=choose_training_dtype("auto", width))
        logger.info("Fine-tuning in %s (--dtype auto).", loop.dtype)
    model, fitted = train(loop, lambda: task.build(load_checkpoint(config.checkpoint, dtype=loop.dtype)),
                          task.train_data, task.held_out, baselines=task.curve_baselines)
    held_out = task.report(model, None if held_out_cut(loop) else fitted)
    report = {"held_out": held_out, "baselines": task.baselines, "steps": loop.steps,
              "train_examples": task.train_examples, "validation_examples": task.validation_examples}
    save_run_model(config.output_dir, model, preprocessor, source=config.checkpoint)
    write_report(config.output_dir, report)
    return report


def save_run_model(output_dir, model, preprocessor, source=None):
    """A run's `model.keras` (the preprocessor inside, so it takes raw strings; written whole or
    not at all; without the optimizer's state, `save_model_file`) and, where HuggingFace has its
    class, the HuggingFace checkpoint under `export/` with its tokenizer: WordPiece's `vocab.txt`
    and `tokenizer_config.json`, or for the other tokenizers the files of the checkpoint folder
    `source` it was fine-tuned from (`tokenizer.json`, `spiece.model`, …; the tokenizer's own
    files where there is none).

    Example:
        ```python
        from keras_bert_lib.runs.finetune import save_run_model
        # save_run_model("runs/mine", classifier, classifier.preprocessor)
        ```
    """
    save_model_file(model, os.path.join(output_dir, "model.keras"))
    export = os.path.join(output_dir, "export")
    try:
        save_checkpoint(model, export, format="hf")
    except ValueError as e:  # e.g. a mean-pooling classifier: no HuggingFace class computes it
        logger.warning("No HuggingFace export: %s", e)
        return
    tokenizer = preprocessor.tokenizer
    if not isinstance(tokenizer, WordPieceTokenizer):
        if not (source and copy_tokenizer_files(resolve_checkpoint(source), export)):
            tokenizer.save_assets(export)
        return
    write_vocabulary(tokenizer.vocabulary, os.path.join(export, "vocab.txt"))
    settings = {"do_lower_case": tokenizer.lowercase, "tokenizer_class": "BertTokenizer",
                "model_max_length": preprocessor.sequence_length}
    if tokenizer.strip_accents is not None:  # said only where it is not BERT's rule (a keras-hub preset keeps accents)
        settings["strip_accents"] = tokenizer.strip_accents
    atomic_write_text(os.path.join(export, "tokenizer_config.json"), json.dumps(settings))
