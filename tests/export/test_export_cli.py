"""keras-bert export: a run folder's model.keras → a SavedModel and an ONNX file, and the parity
table printed; every flag documents its default; bad paths and an existing version are refused."""

import os
import stat

import pytest

from keras_bert_lib import TextClassifier
from keras_bert_lib.cli import main
from tests.tasks.test_task_models import _preprocessor, _tiny

pytest.importorskip("tf2onnx", reason="the export extra is part of the test install")


def test_a_model_file_loads_with_every_weight_the_saved_models(tmp_path):
    """load_model_file builds without drawing (`assigned_next`): every weight, the head's too, is
    then the file's, and a file that lacks a layer's weights fails rather than loading zeros."""
    import zipfile

    import h5py
    import numpy as np

    from keras_bert_lib.export import load_model_file

    saved = TextClassifier(_tiny(), num_classes=3, preprocessor=_preprocessor())
    saved.save(tmp_path / "model.keras")
    loaded, file = load_model_file(tmp_path)
    assert file == str(tmp_path / "model.keras")
    for ours, theirs in zip(loaded.weights, saved.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    # The same file without the head's kernel and bias: refused, not loaded with a zero head.
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    weights = tmp_path / "model.weights.h5"
    weights.write_bytes(members["model.weights.h5"])
    with h5py.File(weights, "a") as h5:
        del h5["layers/classification_head/dense/vars"]
    members["model.weights.h5"] = weights.read_bytes()
    with zipfile.ZipFile(tmp_path / "headless.keras", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match="does not load as a Keras model"):
        load_model_file(tmp_path / "headless.keras")


@pytest.mark.slow
def test_export_writes_both_formats_and_prints_the_parity_table(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    TextClassifier(_tiny(), 2, preprocessor=_preprocessor()).save(str(run / "model.keras"))
    out = tmp_path / "exported"
    assert main(["export", str(run), "--format", "saved_model", "--format", "tflite", "--format", "onnx",
                 "--output", str(out),
                 "--length", "12"]) == 0
    printed = capsys.readouterr().out
    assert os.path.isfile(out / "saved_model" / "1" / "saved_model.pb") and os.path.isfile(out / "model.onnx")
    assert os.path.isfile(out / "model.tflite")
    table = printed[printed.index("artefact"):].splitlines()
    assert [line.split()[0] for line in table[1:]] == ["keras", "saved_model", "tflite", "onnx"]
    for line in table[2:]:
        diff, cosine, agreement = (float(v) for v in line.split()[1:4])
        assert diff <= 1e-4 and cosine > 0.99999 and agreement == 1.0, line
    # The same version again is refused, and nothing is lost.
    assert main(["export", str(run), "--format", "saved_model", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "export as --version 2, or delete the folder" in err and len(err.strip().splitlines()) == 1
    assert main(["export", str(tmp_path / "nothing"), "--format", "onnx"]) == 2
    assert "is not a file" in capsys.readouterr().err
    (tmp_path / "broken.keras").write_text("{}")
    assert main(["export", str(tmp_path / "broken.keras"), "--format", "onnx"]) == 2
    assert "broken.keras does not load as a Keras model" in capsys.readouterr().err


def test_help_gives_every_flag_its_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    stdout = capsys.readouterr().out
    flags = [chunk for chunk in stdout.split("\n  --")[1:]]
    assert len(flags) == 10 and all("default" in f or "(required)" in f for f in flags), flags


def test_quickstart_help_gives_every_flag_its_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["quickstart", "--help"])
    flags = capsys.readouterr().out.split("\n  --")[1:]
    assert len(flags) == 12 and all("default" in f for f in flags), flags


@pytest.mark.slow
def test_parity_report_scores_each_artefact_against_the_true_labels(tmp_path):
    """An exported classifier's held-out accuracy is its own: computed from its `label` output,
    equal to the Keras model's where the labels agree, and printed as a column."""
    import numpy as np

    from keras_bert_lib.export import export_saved_model, format_report, parity_report
    from keras_bert_lib.export.signatures import check_batch

    classifier = TextClassifier(_tiny(), 3)
    ids = check_batch(classifier, batch=6, length=10)
    predicted = np.argmax(classifier.predict_on_batch(ids), -1)
    labels = predicted.copy()
    labels[:2] = (labels[:2] + 1) % 3  # two of six wrong
    rows = parity_report(classifier, {"saved_model": export_saved_model(classifier, tmp_path)}, ids, labels=labels,
                         repeats=1, timed_rows=2)
    assert [r["accuracy"] for r in rows] == [4 / 6, 4 / 6]
    table = format_report(rows)
    assert "accuracy" in table.splitlines()[0] and "0.667" in table.splitlines()[2]


@pytest.mark.slow
def test_parity_report_runs_the_string_signatures_on_the_raw_texts(tmp_path):
    """With `texts`, the SavedModel and the text-in TFLite file get a "text" row each: their own
    tokenizer on the strings against Keras on the preprocessor's ids; ONNX (ids only) none."""
    import numpy as np

    from keras_bert_lib.export import export_saved_model, export_tflite, parity_report

    classifier = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    texts = np.array(["good film", "Café bad plot .", "", "film " * 40], dtype=object)
    ids = {k: v.numpy() for k, v in classifier.preprocessor(texts).items()}
    exported = {"saved_model": export_saved_model(classifier, tmp_path / "sm"),
                "tflite": export_tflite(classifier, tmp_path / "m.tflite")["path"],
                "ids_only": export_tflite(classifier, tmp_path / "ids.tflite", text=False)["path"]}
    rows = parity_report(classifier, exported, ids, repeats=1, texts={"text": texts})
    assert [r["artefact"] for r in rows] == ["keras", "saved_model", "saved_model text", "tflite", "tflite text",
                                             "ids_only"]
    assert all(r["max_abs_diff"] <= 1e-4 and r["agreement"] == 1.0 for r in rows), rows


@pytest.mark.slow
def test_what_export_and_save_checkpoint_write_others_can_read(tmp_path):
    """TF Serving and other readers often run as another user: under umask 022 every folder is
    0755 and every file 0644, as plain makedirs and open give (a staging folder was 0700, a
    safetensors file 0600)."""
    from keras_bert_lib import save_checkpoint

    run = tmp_path / "run"
    run.mkdir()
    model = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    model.save(str(run / "model.keras"))
    old = os.umask(0o022)
    try:
        assert main(["export", str(run), "--format", "saved_model", "--output", str(tmp_path / "exported"),
                     "--dtype", "float32", "--length", "8"]) == 0
        save_checkpoint(model, str(tmp_path / "hf"), format="hf")
    finally:
        os.umask(old)
    paths = [os.path.join(root, name) for folder in ("exported", "hf")
             for root, folders, files in os.walk(tmp_path / folder) for name in folders + files]
    modes = {os.path.relpath(path, tmp_path): stat.S_IMODE(os.stat(path).st_mode) for path in paths}
    assert "exported/saved_model/1/saved_model.pb" in modes and "hf/model.safetensors" in modes
    wrong = {path: oct(mode) for path, mode in modes.items()
             if mode != (0o755 if os.path.isdir(tmp_path / path) else 0o644)}
    assert not wrong, wrong
