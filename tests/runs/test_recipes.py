"""recipes/*.toml: every published setting names its source and strategy, sets only fields its
run has with values the run accepts, and runs two steps through `--recipe` with a tiny model and
data given by flags on top, so that no recipe rots (the quick-start's runs from the installed
wheel, in tests/test_wheel.py)."""

import json
import os
import pathlib

import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.finetuning import TASKS
from keras_bert_lib.runs import DistillConfig, PretrainConfig, QuickstartConfig
from keras_bert_lib.runs.recipes import load_recipe
from tests.runs.test_finetune_spans_run import _brown, _squad_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*.toml"))
CONFIGS = {"pretrain": PretrainConfig, "distill": DistillConfig, "quickstart": QuickstartConfig}
DATA = ROOT / "tests" / "data"


def _command(path):
    import tomllib

    return tomllib.loads(path.read_text())["command"]


def _config_class(path):
    """The run's config class; a fine-tuning recipe's is its task's."""
    import tomllib

    recipe = tomllib.loads(path.read_text())
    if recipe["command"] == "finetune":
        return TASKS[recipe["config"]["task"]].config_class
    return CONFIGS[recipe["command"]]


def test_the_published_settings_are_all_there():
    assert {p.stem for p in RECIPES} >= {"bert_base_pretraining", "bert_large_pretraining", "albert_base_pretraining",
                                         "glue_classification", "squad_v1", "conll_ner", "minilm_sentence_embedding",
                                         "quickstart"}


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_a_recipe_makes_a_valid_config_of_its_run(recipe):
    command = _command(recipe)
    values = load_recipe(recipe, command, _config_class(recipe))
    required = {"checkpoint": "ckpt", "train": "t.csv", "validation": "v.csv"} if command == "finetune" else {}
    config = _config_class(recipe)(**{**values, **required})  # checks choices, ranges, steps against steps_per_epoch
    for key, value in values.items():
        assert getattr(config, key) == value, key


def test_the_papers_numbers():
    """Devlin et al. §A.2, Lan et al. §4.1 and Warner et al. §2.2, as the recipes carry them."""
    base = load_recipe(ROOT / "recipes" / "bert_base_pretraining.toml", "pretrain", PretrainConfig)
    assert (base["batch_size"], base["learning_rate"], base["warmup_steps"]) == (256, 1e-4, 10_000)
    assert [(p["max_seq_length"], p["steps"]) for p in base["phases"]] == [(128, 900_000), (512, 100_000)]
    albert = load_recipe(ROOT / "recipes" / "albert_base_pretraining.toml", "pretrain", PretrainConfig)
    assert (albert["optimizer"], albert["batch_size"], albert["steps"], albert["sentence_task"]) == \
        ("lamb", 4096, 125_000, "sop")
    modern = load_recipe(ROOT / "recipes" / "modernbert_base_pretraining.toml", "pretrain", PretrainConfig)
    assert (modern["masked_lm_prob"], modern["sentence_task"], modern["learning_rate"]) == (0.3, None, 8e-4)
    assert [p["max_seq_length"] for p in modern["phases"]] == [1024, 8192]


def test_a_recipe_for_another_command_or_task_is_refused(capsys, tmp_path):
    assert main(["finetune", "ner", "--recipe", str(ROOT / "recipes" / "squad_v1.toml")]) == 2
    assert "squad_v1.toml is a recipe for `keras-bert finetune squad`, not `ner`." in capsys.readouterr().err
    assert main(["pretrain", "--recipe", str(ROOT / "recipes" / "glue_classification.toml")]) == 2
    assert "is a recipe for `keras-bert finetune`, not `pretrain`." in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text('command = "pretrain"\nsource = "mine"\nstrategy = "auto"\n[config]\nbatch = 3\n')
    assert main(["pretrain", "--recipe", str(bad)]) == 2
    assert "sets ['batch'], which `keras-bert pretrain` does not have" in capsys.readouterr().err


def _tiny_flags(command, recipe, checkpoint, tmp_path, tiny_corpus):
    """Flags that shrink a recipe's run to two steps of a tiny model on tiny data."""
    values = load_recipe(recipe, command, _config_class(recipe))
    out = ["--output-dir", str(tmp_path / "run")]
    common = [*out, "--strategy", "auto", "--no-jit-compile", "--batch-size", "4", "--steps", "2",
              "--steps-per-epoch", "2", "--warmup-steps", "1", "--checkpoint-every", "2"]
    if command == "pretrain":
        phases = [{**p, "steps": 2, "warmup_steps": 1, "max_seq_length": 32, "max_predictions": 5}
                  for p in values.get("phases", [])]
        # A phase these settings make a copy of an earlier one would run the same again: a later
        # phase starting from an earlier one's weights is tests/training/test_phases.py's.
        phases = [p for i, p in enumerate(phases) if p not in phases[:i]]
        return [*common, "--preset", "bert_tiny", "--corpus", str(tiny_corpus), "--vocab-size", "300",
                "--max-seq-length", "32", "--max-predictions", "5", "--dupe-factor", "2",
                "--phases", json.dumps(phases)]
    task, files = values["task"], {}
    if task == "squad":
        files = {"train": _squad_file(tmp_path / "train.json", _brown("train", 16)),
                 "validation": _squad_file(tmp_path / "dev.json", _brown("validation", 8))}
        common += ["--max-query-length", "12", "--doc-stride", "16"]
    elif task == "ner":
        files = {part: str(DATA / "brown_pos" / f"{part}.jsonl") for part in ("train", "validation")}
    elif task == "embed":
        pairs = [json.loads(line) for line in (DATA / "qa_pairs.jsonl").read_text().splitlines()[:16]]
        for name, part in (("train", pairs[:8]), ("validation", pairs[8:])):
            rows = [json.dumps({"text": p["question"], "text_pair": p["answer"]}) + "\n" for p in part]
            (tmp_path / f"{name}.jsonl").write_text("".join(rows))
            files[name] = str(tmp_path / f"{name}.jsonl")
    else:
        files = movie_reviews()
    return [task, *common, "--checkpoint", str(checkpoint), "--train", files["train"], "--validation",
            files["validation"], "--max-seq-length", "48"]


@pytest.mark.slow
@pytest.mark.parametrize("recipe", [r for r in RECIPES if r.stem != "quickstart"], ids=lambda p: p.stem)
def test_a_recipe_runs_two_steps_with_a_tiny_model(recipe, checkpoint, tmp_path, tiny_corpus):
    command = _command(recipe)
    flags = _tiny_flags(command, recipe, checkpoint, tmp_path, tiny_corpus)
    positional = [flags.pop(0)] if command == "finetune" else []
    assert main([command, *positional, "--recipe", str(recipe), *flags]) == 0
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["held_out"], report
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    if command == "pretrain" and not json.loads(flags[flags.index("--phases") + 1]):
        # the recipe's own settings reached the run where no flag overrode them
        values = load_recipe(recipe, command, PretrainConfig)
        assert saved["optimizer"] == values["optimizer"] and saved["sentence_task"] == values["sentence_task"]
    assert os.path.isdir(tmp_path / "run")
