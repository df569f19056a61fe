"""RoBERTa's, ALBERT's, ELECTRA's, ModernBERT's and DeBERTa-v3's families from the command line, on
raw text: a small random checkpoint with a vocabulary learned here (byte-level BPE; SentencePiece
unigram; WordPiece, with ELECTRA's factorised embedding; ModernBERT's NFC byte-level BPE
tokenizer.json, its local window 4 positions either side; DeBERTa-v3's SentencePiece, with
log-bucketed relative positions) fine-tunes on the movie reviews, exports a SavedModel on raw
strings that matches Keras, and answers through `keras-bert serve` as the saved model does (one
server for the five SavedModels)."""

import json

import numpy as np
import pytest

from keras_bert_lib.cli import main
from tests.serve.server_process import call, running_server
from tests.text import families

pytest.importorskip("transformers", reason="transformers is in the [test] extra")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("family_runs")]  # the server test reuses the runs
TEXTS = ["A wonderful, warm film.", "Dull and ``long''  —  I'd skip it.", "Café society, naïvely told"]
FAMILIES = ["roberta", "albert", "electra", "modernbert", "deberta"]


def _fine_tune_and_export(family, few_reviews, folder):
    """(the exported SavedModels' folder, the Keras model's probabilities on TEXTS)."""
    import keras
    import tensorflow as tf

    checkpoint, run, exported = folder / "checkpoint", folder / "run", folder / "exported"
    families.make_folder(checkpoint, family)
    assert main(["finetune", "classify", "--checkpoint", str(checkpoint), "--train", few_reviews["train"],
                 "--validation", few_reviews["validation"], "--output-dir", str(run), "--max-seq-length", "48",
                 "--steps", "4", "--steps-per-epoch", "2", "--batch-size", "8", "--no-jit-compile"]) == 0
    report = json.loads((run / "report.json").read_text())
    assert report["validation_examples"] == 48 and 0.0 <= report["held_out"]["accuracy"] <= 1.0
    if family == "albert":  # HuggingFace's AlbertForSequenceClassification, with the folder's tokenizer
        assert {"tokenizer.json", "spiece.model"} <= {p.name for p in (run / "export").iterdir()}

    model = keras.saving.load_model(run / "model.keras")
    logits = np.asarray(model.predict(TEXTS, verbose=0))  # (3, 2)
    want = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert main(["export", str(run), "--format", "saved_model", "--output", str(exported)]) == 0
    served = tf.saved_model.load(str(exported / "saved_model" / "1"))
    got = served.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    assert np.max(np.abs(got - want)) < 1e-5
    assets = {"roberta": "vocab.json", "albert": "spiece.model", "electra": "vocab.txt", "modernbert": "vocab.json",
              "deberta": "spiece.model"}
    assert (exported / "saved_model" / "1" / "assets" / assets[family]).is_file()
    return exported / "saved_model", want


@pytest.fixture(scope="module")
def fine_tuned(few_reviews, tmp_path_factory):
    """family -> its run and export, each made once: its own test checks them, and the serving test
    serves all five from one server (a server's start-up was most of a family's time)."""
    runs = {}

    def run(family):
        if family not in runs:
            runs[family] = _fine_tune_and_export(family, few_reviews, tmp_path_factory.mktemp(family))
        return runs[family]
    return run


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_fine_tunes_and_exports_a_savedmodel_on_raw_text_that_equals_keras(family, fine_tuned):
    fine_tuned(family)


def test_one_server_answers_each_familys_savedmodel_as_keras_does(fine_tuned, tmp_path):
    runs = {family: fine_tuned(family) for family in FAMILIES}
    with running_server([f"{family}={saved}" for family, (saved, _) in runs.items()], str(tmp_path)) as (url, _):
        for family, (_, want) in runs.items():
            status, body = call(url, "POST", f"/v1/models/{family}:predict", {"instances": TEXTS})
            assert status == 200, (family, body)
            answered = np.array([row["probabilities"] for row in body["predictions"]])
            assert np.max(np.abs(answered - want)) < 1e-5, family
