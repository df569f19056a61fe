"""Without tensorflow-text (Windows, some macOS): encoders and checkpoints work, tokenizing
falls back to HuggingFace tokenizers with the same ids."""

import os
import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow
def test_library_works_without_tensorflow_text(vocab_path):
    script = textwrap.dedent(f"""
        import sys
        sys.modules["tensorflow_text"] = None  # makes `import tensorflow_text` fail
        import numpy as np, tensorflow as tf
        import keras_bert_lib as kb
        from keras_bert_lib.text import WordPieceTokenizer
        encoder = kb.bert_tiny(num_hidden_layers=1)
        tokenizer = WordPieceTokenizer({vocab_path!r})
        assert tokenizer._engine == "tokenizers", tokenizer._engine
        ids = tokenizer(tf.constant(["Sinan loves a beautiful day"])).to_list()
        assert ids == [[8254, 2319, 7459, 1037, 3376, 2154]], ids
        assert "tensorflow_text" not in {{m for m in sys.modules if sys.modules[m] is not None}}
        # What needs tensorflow-text says so, with the install line.
        from keras_bert_lib.text import BertPreprocessor, learn_vocabulary
        for attempt in (lambda: BertPreprocessor(tokenizer, sequence_length=8)(["hello"]),
                        lambda: learn_vocabulary(lines=["a b"], vocab_size=10)):
            try:
                attempt()
            except ImportError as e:
                assert "needs tensorflow-text" in str(e) and "pip install 'tensorflow-text" in str(e), e
            else:
                raise AssertionError("no ImportError")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
