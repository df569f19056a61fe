"""keras-bert export: a run folder's model.keras → a SavedModel and an ONNX file, and the parity
table printed; every flag documents its default; bad paths and an existing version are refused."""

import os

import pytest

from keras_bert_lib import TextClassifier
from keras_bert_lib.cli import main
from tests.models.test_task_models import _preprocessor, _tiny

pytest.importorskip("tf2onnx", reason="the export extra is part of the test install")


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
    assert "export version=2" in capsys.readouterr().err
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
    assert len(flags) == 7 and all("default" in f or "(required)" in f for f in flags), flags
