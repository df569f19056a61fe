"""Head layers that turn encoder outputs into task outputs (usable on any encoder)."""

from keras_bert_lib.heads.classification_head import ClassificationHead
from keras_bert_lib.heads.masked_lm_head import MaskedLMHead
from keras_bert_lib.heads.pooling import Pooling
from keras_bert_lib.heads.replaced_token_head import ReplacedTokenHead
from keras_bert_lib.heads.sentence_pair_head import SentencePairHead
from keras_bert_lib.heads.span_head import SpanHead
from keras_bert_lib.heads.token_classification_head import TokenClassificationHead

__all__ = [
    "ClassificationHead",
    "MaskedLMHead",
    "Pooling",
    "ReplacedTokenHead",
    "SentencePairHead",
    "SpanHead",
    "TokenClassificationHead",
]
