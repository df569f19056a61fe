"""A SavedModel that takes raw strings: preprocessor + encoder, served in a fresh process."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lib import bert_tiny
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer


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
