"""BERT's text clean-up before WordPiece: control characters, lower-casing, accents."""

import tensorflow as tf

from keras_bert_lib.text.tf_text import import_tensorflow_text


def normalize(text, lowercase, strip_accents):
    """BERT's text clean-up, in graph ops, exactly as Google's and HuggingFace's tokenizers do it.

    Tabs and line breaks become spaces; other control and format characters (Cc, Cf) and U+FFFD
    are removed; then optionally lower-case (character by character, as HuggingFace does: a
    word-final Σ becomes σ, where Google's Python `str.lower()` gives ς) and strip accents (NFD,
    then drop combining marks Mn). tensorflow-text's own normaliser case-folds instead
    ("ß" → "ss", "ﬁ" → "fi"), which is not what BERT's vocabularies were built with.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.normalizer import normalize
        normalize(tf.constant(["Café\\tDupont"]), lowercase=True, strip_accents=True)  # [b"cafe dupont"]
        ```
    """
    text = tf.strings.regex_replace(text, r"[\t\n\r]", " ")
    text = tf.strings.regex_replace(text, r"[\p{Cc}\p{Cf}\x{FFFD}]", "")
    if lowercase:
        # ICU's lower() applies the word-final sigma rule; HuggingFace lowers char by char.
        text = tf.strings.lower(tf.strings.regex_replace(text, "Σ", "σ"), encoding="utf-8")
    if strip_accents:
        tft = import_tensorflow_text("normalize(strip_accents=True)")
        text = tf.strings.regex_replace(tft.normalize_utf8(text, "NFD"), r"\p{Mn}", "")
    return text
