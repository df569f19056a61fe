"""A SavedModel that takes raw strings: preprocessor + encoder, served in a fresh process."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import bert_tiny
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer


@pytest.mark.slow
def test_saved_model_takes_raw_strings_and_equals_keras(vocab_path, tmp_path):
    preprocess = BertPreprocessor(WordPieceTokenizer(vocab_path), sequence_length=16)
    encoder = bert_tiny(num_hidden_layers=1)
    first = keras.Input(shape=(), dtype="string", name="first")
    second = keras.Input(shape=(), dtype="string", name="second")
    model = keras.Model({"first": first, "second": second},
                        encoder(preprocess((first, second)))["pooled_output"])
    texts = {"first": tf.constant(["Is it raining in Zürich?", "Hi"]),
             "second": tf.constant(["No, it is sunny.", "Hello there, general Kenobi"])}
    expected = model(texts).numpy()
    # The functional model feeds each packed input to its own encoder input.
    direct = encoder(preprocess((texts["first"], texts["second"])))["pooled_output"].numpy()
    np.testing.assert_allclose(expected, direct, atol=1e-6)
    model.export(str(tmp_path / "sm"), format="tf_saved_model", verbose=False)
    # The vocabulary is stored once: inside the tokenizer's graph constant (a rare token, counted
    # in every file).
    assert sum((tmp_path / "sm" / root / f).read_bytes().count(b"[unused99]")
               for root, _, files in os.walk(tmp_path / "sm") for f in files) == 1
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # registers the text ops
        served = tf.saved_model.load({str(tmp_path / "sm")!r})
        out = served.serve({{"first": tf.constant(["Is it raining in Zürich?", "Hi"]),
                             "second": tf.constant(["No, it is sunny.", "Hello there, general Kenobi"])}})
        np.save({str(tmp_path / "out.npy")!r}, out.numpy())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, atol=1e-5)


@pytest.mark.slow
def test_the_vocabulary_is_stored_once_in_a_keras_file(vocab_path, tmp_path):
    """As an asset (assets/…/vocab.txt), not a list in its config.json (a rare token is counted
    in every file). The SavedModel's single copy is checked above."""
    import zipfile

    preprocess = BertPreprocessor(WordPieceTokenizer(vocab_path), sequence_length=16)
    encoder = bert_tiny(num_hidden_layers=1)
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, encoder(preprocess(text))["pooled_output"])
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        names = archive.namelist()
        counts = {n: archive.read(n).count(b"[unused99]") for n in names}
        config = archive.read("config.json")
    assert [n for n in names if n.endswith("vocab.txt")] == ["assets/layers/bert_preprocessor/tokenizer/vocab.txt"]
    assert sum(counts.values()) == 1 and len(config) < 20_000
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    texts = tf.constant(["Is it raining in Zürich?", "Hi"])
    np.testing.assert_allclose(loaded(texts).numpy(), model(texts).numpy(), atol=1e-6)
