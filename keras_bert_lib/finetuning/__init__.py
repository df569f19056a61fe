"""Fine-tuning recipes, one per task: one declared protocol (`Task`), one module per task, and the registry.

    classify       labelled texts or pairs        → TextClassifier        finetuning/classify.py
    pair_classify  labelled text pairs            → TextClassifier        finetuning/pair_classify.py
    rerank         labelled (query, passage)      → CrossEncoder          finetuning/rerank.py
    embed          (anchor, positive) pairs       → SentenceEmbedder      finetuning/embed.py
    squad          SQuAD JSON                     → SpanQuestionAnswerer  finetuning/squad.py
    ner            words and tags                 → TokenClassifier       finetuning/ner.py
    similarity     scored text pairs (regression) → TextClassifier        finetuning/similarity.py

A new task is one module here and one line in `TASKS` (docs/tasks.md works one through).
"""

import json
import os

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("finetuning", also=("jax",))

from keras_bert_lib.finetuning.classify import Classify, ClassifyConfig  # noqa: E402
from keras_bert_lib.finetuning.embed import Embed, EmbedConfig  # noqa: E402
from keras_bert_lib.finetuning.ner import Ner, NerConfig  # noqa: E402
from keras_bert_lib.finetuning.pair_classify import PairClassify, PairClassifyConfig  # noqa: E402
from keras_bert_lib.finetuning.rerank import Rerank, RerankConfig  # noqa: E402
from keras_bert_lib.finetuning.similarity import Similarity, SimilarityConfig  # noqa: E402
from keras_bert_lib.finetuning.squad import Squad, SquadConfig  # noqa: E402
from keras_bert_lib.finetuning.task import FinetuneConfig, Serving, Task, TextsConfig, task_field  # noqa: E402

TASKS = {task.name: task for task in (
    Classify,
    PairClassify,
    Rerank,
    Embed,
    Squad,
    Ner,
    Similarity,
)}


def get_task(name):
    """The `Task` class registered as `name`; an unknown name fails naming the tasks there are.

    Example:
        ```python
        from keras_bert_lib.finetuning import get_task
        get_task("ner").model_class.__name__   # 'TokenClassifier'
        ```
    """
    if name not in TASKS:
        raise ValueError(f"No task {name!r}: the tasks are {', '.join(TASKS)}.")
    return TASKS[name]


def task_of_run(path):
    """The `Task` class of the fine-tuning run that wrote `path` (a run folder, or the model.keras
    in one), read from its `config.json`; None for anything else (a bare .keras file).

    Example:
        ```python
        from keras_bert_lib.finetuning import task_of_run
        task_of_run("no/such/run")   # None
        ```
    """
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            name = json.load(f).get("task")
    except (OSError, ValueError, AttributeError):
        return None
    return TASKS.get(name) if isinstance(name, str) else None


__all__ = ["TASKS", "Classify", "ClassifyConfig", "Embed", "EmbedConfig", "FinetuneConfig", "Ner", "NerConfig",
           "PairClassify", "PairClassifyConfig", "Rerank", "RerankConfig", "Serving", "Similarity",
           "SimilarityConfig", "Squad", "SquadConfig", "Task", "TextsConfig", "get_task", "task_field",
           "task_of_run"]
