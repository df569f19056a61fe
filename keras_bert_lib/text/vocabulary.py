"""WordPiece vocabularies: reading one, checking its special tokens, and learning one from text."""

import collections
import logging
import os

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.file_checks import check_utf8, open_text
from keras_bert_lib.progress import progress_bar
from keras_bert_lib.text.normalizer import normalize
from keras_bert_lib.text.tf_text import import_tensorflow_text

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocabulary(vocabulary):
    """A list of tokens from a `vocab.txt` path (one token a line) or a list; checks the specials.

    Raises:
        ValueError: if `[PAD] [UNK] [CLS] [SEP] [MASK]` are not all in it (the missing ones named),
            or a token appears twice.
    Example:
        ```python
        from keras_bert_lib.text import read_vocabulary
        vocab = read_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"])
        ```
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        with open_text(vocabulary) as f:
            tokens = [line.rstrip("\n").rstrip("\r") for line in f]
        while tokens and tokens[-1] == "":
            tokens.pop()
        source = os.fspath(vocabulary)
    else:
        tokens, source = [str(t) for t in vocabulary], "the vocabulary"
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(f"{source} lacks the special tokens {missing}; a BERT vocabulary needs all of "
                         f"{list(SPECIAL_TOKENS)} (learn_vocabulary puts them first).")
    repeated = [t for t, n in collections.Counter(tokens).items() if n > 1]
    if repeated:
        raise ValueError(f"{source} has repeated tokens {repeated[:10]}; each token must appear once.")
    return tokens


def write_vocabulary(tokens, path):
    """Writes one token a line, atomically (a temporary file, then a rename).

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.text import write_vocabulary
        write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], os.path.join(tempfile.mkdtemp(), "vocab.txt"))
        ```
    """
    atomic_write_text(path, "\n".join(tokens) + "\n")


def _learn(learner, counts, vocab_size, min_count, slack_ratio=0.05):
    """The learner's binary search for the count threshold, after one pass at the lowest.

    The search probes thresholds from the middle of [min_count, the highest count] down, about 14
    passes; when even min_count gives fewer than (1 - slack) · vocab_size tokens, the corpus is
    too small for the size asked, every probe goes lower, and the search ends on that same
    lowest pass: it is taken at once (one pass instead of about 14, the same vocabulary).
    """
    reserved = list(SPECIAL_TOKENS)
    lowest = learner.learn(counts.items(), vocab_size, reserved, upper_thresh=min_count, lower_thresh=min_count,
                           slack_ratio=slack_ratio)
    if len(lowest) < vocab_size * (1 - slack_ratio):
        logger.warning("The corpus gives %d tokens with words seen at least min_count=%d times, fewer than "
                       "vocab_size=%d: learning that vocabulary. Give more text, or a lower min_count, for more.",
                       len(lowest), min_count, vocab_size)
        return lowest
    return learner.learn(counts.items(), vocab_size, reserved, lower_thresh=min_count, slack_ratio=slack_ratio)


def learn_vocabulary(files=None, vocab_size=8000, lowercase=True, output=None, batch_size=1024,
                     min_count=2, verbose=True, *, lines=None):
    """Learns a WordPiece vocabulary with tensorflow-text's learner; the special tokens come first.

    Words are produced by the same normalisation as `WordPieceTokenizer(lowercase=...)`, so the
    vocabulary fits the tokenizer that will use it.

    Args:
        files: a text file path or a list of them (each must exist), or None with `lines`.
        lines: an iterable of strings to learn from instead of files (keyword only).
        vocab_size: int. The largest vocabulary to return (special tokens included).
        lowercase: bool. Learn an uncased vocabulary (lower-case, accents stripped).
        output: optional path; the vocabulary is written there as `vocab.txt`, atomically.
        batch_size: lines per counting step.
        min_count: int. Words seen fewer times are not used to learn pieces.
        verbose: show a progress bar while counting words.
    Returns:
        list of tokens: `[PAD] [UNK] [CLS] [SEP] [MASK]`, then the learned pieces.
    Raises:
        ValueError: files that do not exist (all named), or neither or both of files and lines.
    Example:
        ```python
        from keras_bert_lib.text import learn_vocabulary
        vocab = learn_vocabulary(lines=["the cat sat on the mat", "the dog sat"] * 50, vocab_size=60, verbose=False)
        ```
    Reference:
        tensorflow_text.tools.wordpiece_vocab (the BERT vocabulary learner)
    """
    import tensorflow as tf

    import_tensorflow_text("learn_vocabulary")
    from tensorflow_text.python.ops.bert_tokenizer import BasicTokenizer
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    if (files is None) == (lines is None):
        raise ValueError("learn_vocabulary takes corpus files, or lines=[...] of text; give one of the two.")
    if files is not None:
        files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
        missing = [f for f in files if not os.path.isfile(f)]
        if missing or not files:
            raise ValueError(f"Corpus files not found: {missing or '(none given)'}.")
        check_utf8(files)  # TensorFlow reads bytes and would learn pieces of broken characters
        dataset, total = tf.data.TextLineDataset(files), None
    else:
        lines = list(lines)
        dataset, total = tf.data.Dataset.from_tensor_slices(tf.constant(lines, tf.string)), len(lines)
    splitter = BasicTokenizer(lower_case=False, normalization_form=None)
    words = dataset.batch(batch_size).map(
        tf.autograph.experimental.do_not_convert(  # plain graph code: autograph would only slow its trace
            lambda x: splitter.tokenize(normalize(x, lowercase, lowercase)).flat_values),
        num_parallel_calls=tf.data.AUTOTUNE)
    counts = collections.Counter()
    bar = progress_bar(total, "line") if verbose else None
    for step, batch in enumerate(words.prefetch(tf.data.AUTOTUNE)):
        counts.update(w.decode("utf-8") for w in batch.numpy())
        if bar is not None:
            bar.update(min((step + 1) * batch_size, total) if total else (step + 1) * batch_size)
    vocab = _learn(learner, counts, vocab_size, min_count)
    if output is not None:
        write_vocabulary(vocab, output)
    return vocab
