"""The task registry: every task declares the protocol, and what it declares is what it does: its
config's fields are its flags, its metrics are what it evaluates, its serving inputs and outputs are
what the export writes, and its prediction rows hold what it says."""

import dataclasses

import numpy as np
import pytest

from keras_bert_lib.export.signatures import output_names, text_input_names
from keras_bert_lib.finetuning import TASKS, FinetuneConfig, Task, get_task, task_of_run

ATTRIBUTES = ("name", "description", "reads", "config_class", "model_class", "metrics", "serves", "prediction_columns")


def test_the_six_tasks_of_the_layout_and_the_worked_example_are_registered():
    assert set(TASKS) == {"classify", "pair_classify", "rerank", "embed", "squad", "ner", "similarity"}
    with pytest.raises(ValueError, match="No task 'sts': the tasks are classify, pair_classify"):
        get_task("sts")


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_task_declares_the_protocol(name):
    task = TASKS[name]
    assert issubclass(task, Task) and task.name == name
    for attribute in ATTRIBUTES:
        assert getattr(task, attribute, None), (name, attribute)
    assert issubclass(task.config_class, FinetuneConfig)
    fields = {f.name: f for f in dataclasses.fields(task.config_class)}
    assert fields["task"].default == name
    for field in fields.values():  # every flag says what it does
        assert field.metadata.get("help"), (name, field.name)
    assert set(task.serves.inputs) <= {"text", "text_pair"} and task.serves.outputs


def test_a_task_without_its_methods_cannot_be_made():
    class Half(Task):
        def build(self, encoder):
            return encoder

    with pytest.raises(TypeError, match="abstract method"):
        Half(None, None)


def test_the_run_folder_names_its_task(tmp_path):
    assert task_of_run(str(tmp_path)) is None
    (tmp_path / "config.json").write_text('{"task": "pair_classify"}')
    assert task_of_run(str(tmp_path / "model.keras")) is TASKS["pair_classify"]
    (tmp_path / "config.json").write_text('{"task": "pretrain?"}')
    assert task_of_run(str(tmp_path)) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TASKS))
def test_what_a_task_declares_is_what_its_model_and_export_do(name, checkpoint, task_files, tmp_path):
    """Built on real files of its kind (a tiny encoder, untrained): the model class, the export's
    outputs and string inputs, the metric names and the prediction rows are the declared ones."""
    from keras_bert_lib.models import load_checkpoint
    from keras_bert_lib.runs import finetune_config
    from keras_bert_lib.text import load_preprocessor

    task_class = TASKS[name]
    train, validation = task_files[name]
    config = finetune_config(name, checkpoint=str(checkpoint), train=train, validation=validation, batch_size=8,
                             max_seq_length=48, output_dir=str(tmp_path / "run"))
    task = task_class(config, load_preprocessor(checkpoint, sequence_length=48))
    assert task.train_size >= task.train_examples > 0 and task.validation_examples > 0
    features, _ = next(iter(task.train_data))[:2]
    assert features["token_ids"].shape[-1] <= 48  # each batch at its own longest, capped
    model = task.build(load_checkpoint(checkpoint))
    assert isinstance(model, task_class.model_class)
    assert output_names(model) == task_class.serves.outputs
    assert text_input_names(model, pair=len(task_class.serves.inputs) == 2) == task_class.serves.inputs
    assert set(task.evaluate(model)) <= set(task_class.metrics)
    rows = {"squad": {"question": ["What comes after The?"] * 2, "context": ["The jury said it.", "The end"]},
            "ner": {"text": ["The jury said it.", "Fine"]}}.get(name, {"text": ["a question", "b"],
                                                                      "text_pair": ["an answer", "c"]})
    predicted = task_class.prediction_rows(model, {k: v for k, v in rows.items() if k in task_class.prediction_columns})
    assert len(predicted) == 2 and all(isinstance(row, dict) and row for row in predicted)
    first = predicted[0]
    expected = {"classify": {"label", "score"}, "pair_classify": {"label", "score"}, "rerank": {"score"},
                "embed": {"embedding"}, "squad": {"text", "start", "end", "score"}, "ner": {"entities"},
                "similarity": {"score"}}[name]
    assert set(first) == expected
    if name == "embed":
        assert np.isclose(np.linalg.norm(first["embedding"]), 1.0, atol=1e-5)  # normalised, as the model gives
    if name == "squad" and first["start"] is not None:
        assert rows["context"][0][first["start"]:first["end"]] == first["text"]
