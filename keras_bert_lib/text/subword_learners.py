"""Vocabularies of the other families, learned from a corpus as their authors learned them:
ALBERT's SentencePiece unigram model (sentencepiece's trainer, as Google's ALBERT) and RoBERTa's
byte-level BPE (HuggingFace tokenizers' trainer). WordPiece's learner is `learn_vocabulary`."""

import os
import shutil
import tempfile

import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.file_checks import check_utf8
from keras_bert_lib.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_lib.text.sentencepiece_tokenizer import SentencePieceTokenizer, albert_normalize

ALBERT_SPECIALS = {"start": "[CLS]", "end": "[SEP]", "pad": "<pad>", "mask": "[MASK]", "unk": "<unk>"}
ROBERTA_SPECIALS = {"start": "<s>", "end": "</s>", "pad": "<pad>", "mask": "<mask>", "unk": "<unk>"}


def _lines(files):
    files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing or not files:
        raise ValueError(f"Corpus files not found: {missing or '(none given)'}.")
    check_utf8(files)
    return files


def learn_sentencepiece(files, vocab_size=8000, output="spiece.model", lowercase=True):
    """Learns ALBERT's vocabulary: a SentencePiece unigram model on the corpus after ALBERT's own
    clean-up (`albert_normalize`), `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4, as
    Google's `spiece.model`; written atomically to `output`.

    Returns:
        SentencePieceTokenizer on the learned model.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.text.subword_learners import learn_sentencepiece
        corpus = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(corpus, "w").write("the cat sat on the mat\\nthe dog ran far away\\n" * 50)
        tokenizer = learn_sentencepiece(corpus, 40, os.path.join(os.path.dirname(corpus), "spiece.model"))
        tokenizer.cls_id   # 2
        tokenizer.vocabulary_size() <= 40   # True (a corpus this small holds fewer pieces than asked)
        ```
    Reference:
        Kudo & Richardson, 2018; Lan et al., 2020 (ALBERT's 30k unigram vocabulary)
    """
    import sentencepiece

    lines = tf.data.TextLineDataset(_lines(files)).batch(1024).map(
        lambda t: albert_normalize(t, lowercase, lowercase))
    model = bytearray()

    class _Writer:  # sentencepiece writes the model to any object with write()
        def write(self, data):
            model.extend(data)

    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=(line.decode("utf-8") for batch in lines.as_numpy_iterator() for line in batch if line),
        model_writer=_Writer(), vocab_size=vocab_size, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1,
        eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"], input_sentence_size=1_000_000,
        shuffle_input_sentence=True, hard_vocab_limit=False, minloglevel=2)
    atomic_write_text(output, bytes(model))
    return SentencePieceTokenizer(output, lowercase=lowercase, strip_accents=lowercase, albert_quotes=True,
                                  special_tokens=ALBERT_SPECIALS)


def learn_byte_pairs(files, vocab_size=8000, output_dir=".", min_frequency=2):
    """Learns RoBERTa's vocabulary: byte-level BPE (every byte a token, so nothing is unknown) on
    the corpus, `<s>`=0, `<pad>`=1, `</s>`=2, `<unk>`=3, `<mask>`=4; writes `vocab.json` and
    `merges.txt` into `output_dir`. Words are read after a space ("Ġ"), so each word's first
    token marks where it begins (whole-word masking).

    Returns:
        BytePairTokenizer on the learned files.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.text.subword_learners import learn_byte_pairs
        folder = tempfile.mkdtemp()
        open(os.path.join(folder, "c.txt"), "w").write("the cat sat on the mat\\n" * 50)
        tokenizer = learn_byte_pairs(os.path.join(folder, "c.txt"), 300, folder)
        tokenizer.id_to_token(tokenizer(["the cat"])[0][0])   # "Ġthe"
        ```
    Reference:
        Sennrich et al., 2016; Radford et al., 2019; Liu et al., 2019 (RoBERTa's 50k byte-level BPE)
    """
    from tokenizers import ByteLevelBPETokenizer

    learner = ByteLevelBPETokenizer(add_prefix_space=True)
    learner.train(_lines(files), vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
                  special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    staging = tempfile.mkdtemp(dir=output_dir)
    try:
        learner.save_model(staging)
        for name in ("merges.txt", "vocab.json"):  # vocab.json last: a resumed run looks for it
            os.replace(os.path.join(staging, name), os.path.join(output_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BytePairTokenizer(os.path.join(output_dir, "vocab.json"), os.path.join(output_dir, "merges.txt"),
                             add_prefix_space=True, special_tokens=ROBERTA_SPECIALS)
