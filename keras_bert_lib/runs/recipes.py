"""Recipes: the published training settings as TOML files, read into a run's config.

A recipe says which command it is for, where its numbers come from, the distribution strategy it
expects, and the config fields it sets:

    command = "pretrain"                     # pretrain | finetune | distill | quickstart
    source = "Devlin et al. 2019, §A.2"      # the paper's table or the original repository
    strategy = "tpu"                         # one_device | mirrored | multi_worker | tpu | auto
    [config]
    preset = "bert_base"
    ...

`keras-bert pretrain --recipe recipes/bert_base_pretraining.toml` runs it; flags override it.
"""

import dataclasses
import os

from keras_bert_lib.training.strategy import STRATEGIES

try:  # Python 3.11 has tomllib; 3.10 reads TOML with tomli, its origin (a dependency there)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

COMMANDS = ("pretrain", "finetune", "distill", "quickstart")


def load_recipe(path, command, config_class, task=None):
    """The config fields a recipe sets, checked against `config_class` ({field: value}; for runs
    with a `strategy` field the recipe's strategy is among them; "none" gives None where the field
    takes it, as on the command line). Raises a ValueError naming the
    file and the fix: a recipe for another command (or, with `task`, another fine-tuning task), a
    missing source or strategy, a field the run does not have.

    Example:
        ```python
        import pathlib
        from keras_bert_lib.runs import PretrainConfig
        from keras_bert_lib.runs.recipes import load_recipe
        recipe = pathlib.Path("recipes/bert_base_pretraining.toml")
        if recipe.exists():   # the recipes live in the repository, beside the package
            load_recipe(recipe, "pretrain", PretrainConfig)["preset"]   # 'bert_base'
        ```
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            recipe = tomllib.load(f)
    except FileNotFoundError:
        raise ValueError(f"No such recipe: {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path} is not TOML: {e}") from None
    if recipe.get("command") != command:
        raise ValueError(f"{path} is a recipe for `keras-bert {recipe.get('command')}`, not `{command}`.")
    for key in ("source", "strategy"):
        if not recipe.get(key):
            raise ValueError(f"{path} has no {key!r}: every recipe says where its numbers come from and the "
                             "distribution strategy it expects.")
    if recipe["strategy"] not in STRATEGIES:
        raise ValueError(f"{path}: strategy {recipe['strategy']!r} is not one of {STRATEGIES}.")
    fields = {f.name for f in dataclasses.fields(config_class)}
    values = dict(recipe.get("config", {}))
    if task is not None and values.get("task", task) != task:
        raise ValueError(f"{path} is a recipe for `keras-bert finetune {values['task']}`, not `{task}`.")
    unknown = sorted(set(values) - fields)
    if unknown:
        name = f"{command} {task}" if task else command
        raise ValueError(f"{path} sets {unknown}, which `keras-bert {name}` does not have (its fields: "
                         f"{', '.join(sorted(fields))}).")
    optional = {f.name for f in dataclasses.fields(config_class) if "None" in str(f.type)}
    values = {k: None if k in optional and v == "none" else v for k, v in values.items()}  # TOML has no null
    if "strategy" in fields:
        values.setdefault("strategy", recipe["strategy"])
    return values
