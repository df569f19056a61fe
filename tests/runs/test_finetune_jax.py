"""`KERAS_BACKEND=jax keras-bert finetune classify`: the fine-tuning run on Keras' JAX backend
(tf.data and tensorflow-text on the host feed JAX's compiled steps), in a fresh process. Its
model.keras, read back here on TensorFlow, predicts the labels its report scored. (Length 16: XLA
compiles a step for each batch width: at most two widths at 16 tokens, four at 32.)"""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.backend_env import backend_env

pytest.importorskip("jax", reason="jax (CPU) is in the [test] extra")
pytestmark = pytest.mark.slow


def test_a_jax_fine_tuning_run_writes_a_model_tensorflow_reads(checkpoint, few_reviews, tmp_path):
    import keras

    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "keras_bert_lib.cli", "finetune", "classify", "--checkpoint",
                           str(checkpoint), "--train", few_reviews["train"], "--validation", few_reviews["validation"],
                           "--output-dir", str(out), "--max-seq-length", "16", "--epochs", "2", "--learning-rate",
                           "1e-3"], env=backend_env("jax"), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    rows = list(csv.DictReader(open(few_reviews["validation"], encoding="utf-8")))
    model = keras.models.load_model(out / "model.keras")  # written on JAX, read on TensorFlow
    predicted = model.predict_labels([r["text"] for r in rows])
    accuracy = float(np.mean([p == r["label"] for p, r in zip(predicted, rows)]))
    assert accuracy == pytest.approx(report["held_out"]["accuracy"], abs=1 / len(rows)), (accuracy, report)
    assert len((out / "history.csv").read_text().splitlines()) == 3  # a header and 2 epochs
    from keras_bert_lib import load_checkpoint

    start = {w.path: np.asarray(w) for w in load_checkpoint(checkpoint).weights}
    trained = {w.path: np.asarray(w) for w in model.encoder.weights}
    moved = [p for p in start if p in trained and not np.allclose(start[p], trained[p])]
    assert len(moved) > len(start) // 2, "the encoder did not train"
