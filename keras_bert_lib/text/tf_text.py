"""tensorflow-text, imported where it is used, with an error that says what needs it."""

INSTALL = "pip install 'tensorflow-text>=2.21,<2.22'"


def import_tensorflow_text(what):
    """The `tensorflow_text` module, or an ImportError naming `what` needs it and the install line.

    tensorflow-text has wheels for Linux (and some macOS releases), none for Windows. Without it
    the encoders, heads and checkpoints work, and `WordPieceTokenizer` falls back on HuggingFace
    `tokenizers` eagerly; packing (`BertPacker`, `BertPreprocessor`), vocabulary learning,
    masking and text-in export need it.

    Example:
        ```python
        from keras_bert_lib.text.tf_text import import_tensorflow_text
        tft = import_tensorflow_text("BertPacker")
        ```
    """
    try:
        import tensorflow_text
    except ImportError:
        raise ImportError(f"{what} needs tensorflow-text, which is not installed: {INSTALL} "
                          "(Linux; there is no Windows wheel). Without it, WordPieceTokenizer "
                          "still tokenizes eagerly through HuggingFace tokenizers.") from None
    return tensorflow_text
