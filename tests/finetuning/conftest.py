import json
import os
import pathlib

import numpy as np
import pytest

from tests.runs.conftest import checkpoint  # noqa: F401  the 2-layer BERT-Tiny with MiniLM's vocabulary
from tests.runs.test_finetune_spans_run import _brown, _squad_file

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def lee_pairs(folder, split=35):
    """The Lee corpus' 50 news documents and their 1,225 human similarity scores (0 to 1) as
    `text,text_pair,label` CSV files: training pairs among documents 0 … split-1, held-out
    pairs among the rest, so that no held-out document was seen in training."""
    import csv

    documents = (DATA / "lee" / "lee.cor").read_text(encoding="latin-1").splitlines()  # "£" is byte 0xa3
    scores = np.loadtxt(DATA / "lee" / "similarities0-1.txt")
    files = {}
    for name, ids in (("train", range(split)), ("validation", range(split, len(documents)))):
        path = os.path.join(folder, f"lee_{name}.csv")
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "text_pair", "label"])
            ids = list(ids)
            for k, i in enumerate(ids):
                for j in ids[k + 1:]:
                    writer.writerow([documents[i], documents[j], f"{scores[i, j]:.6f}"])
        files[name] = path
    return files


@pytest.fixture(scope="module")
def task_files(tmp_path_factory):
    """{task: (train, validation)}: small real files of every registered task's kind."""
    from keras_bert_lib.data import movie_reviews

    folder = tmp_path_factory.mktemp("task_files")
    pairs = [json.loads(line) for line in (DATA / "qa_pairs.jsonl").read_text(encoding="utf-8").splitlines()][:64]
    files = {"classify": (movie_reviews()["train"], movie_reviews()["validation"])}
    for name, part in (("train", pairs[:32]), ("validation", pairs[32:])):
        (folder / f"{name}_pairs.jsonl").write_text("".join(
            json.dumps({"text": p["question"], "text_pair": p["answer"]}) + "\n" for p in part))
        shuffled = [p["answer"] for p in part[1:] + part[:1]]  # each question with another's answer: not relevant
        (folder / f"{name}_ranked.jsonl").write_text("".join(
            json.dumps({"text": p["question"], "text_pair": passage, "label": label}) + "\n"
            for p, wrong in zip(part, shuffled) for passage, label in ((p["answer"], 1), (wrong, 0))))
        (folder / f"{name}_nli.jsonl").write_text("".join(
            json.dumps({"text": p["question"], "text_pair": passage, "label": "answers" if label else "other"}) + "\n"
            for p, wrong in zip(part, shuffled) for passage, label in ((p["answer"], 1), (wrong, 0))))
    for kind, task in (("pairs", "embed"), ("ranked", "rerank"), ("nli", "pair_classify")):
        files[task] = (str(folder / f"train_{kind}.jsonl"), str(folder / f"validation_{kind}.jsonl"))
    files["squad"] = (_squad_file(folder / "train.json", _brown("train", 16)),
                      _squad_file(folder / "dev.json", _brown("validation", 8)))
    files["ner"] = tuple(str(DATA / "brown_pos" / f"{part}.jsonl") for part in ("train", "validation"))
    lee = lee_pairs(folder)
    files["similarity"] = (lee["train"], lee["validation"])
    return files
