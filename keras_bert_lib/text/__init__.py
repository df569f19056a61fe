"""Text → ids in the TensorFlow graph: WordPiece, SentencePiece, byte-level BPE, packing,
vocabularies, a built-in corpus, and the windows of long contexts for question answering.

tensorflow-text is imported only when a tokenizer is built, so the encoders, checkpoints and
ONNX export work without it.
"""

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("text", also=("jax",))

from keras_bert_lib.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_lib.text.load_preprocessor import load_preprocessor
from keras_bert_lib.text.packer import BertPacker
from keras_bert_lib.text.preprocessor import BertPreprocessor
from keras_bert_lib.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_lib.text.squad_features import SquadFeatures, squad_features
from keras_bert_lib.text.squad_windows import best_span, doc_windows, max_context_window
from keras_bert_lib.text.stdlib_corpus import build_stdlib_corpus
from keras_bert_lib.text.token_features import TokenFeatures, token_features
from keras_bert_lib.text.vocabulary import (
    SPECIAL_TOKENS,
    learn_vocabulary,
    read_vocabulary,
    write_vocabulary,
)
from keras_bert_lib.text.wordpiece_tokenizer import WordPieceTokenizer

__all__ = [
    "BertPacker",
    "BertPreprocessor",
    "BytePairTokenizer",
    "SentencePieceTokenizer",
    "SPECIAL_TOKENS",
    "SquadFeatures",
    "TokenFeatures",
    "WordPieceTokenizer",
    "best_span",
    "doc_windows",
    "max_context_window",
    "squad_features",
    "token_features",
    "build_stdlib_corpus",
    "load_preprocessor",
    "learn_vocabulary",
    "read_vocabulary",
    "write_vocabulary",
]
