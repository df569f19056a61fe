"""ModernBERT (Warner et al., 2024) as one family: its config and presets, block, encoder and
checkpoint names. `keras_bert_lib.modernbert_base()` builds one; `load_checkpoint` reads HuggingFace's."""

from keras_bert_lib.modernbert.block import ModernBertBlock
from keras_bert_lib.modernbert.config import MODERNBERT_PRESETS, ModernBertConfig
from keras_bert_lib.modernbert.encoder import ModernBertEncoder

__all__ = ["MODERNBERT_PRESETS", "ModernBertBlock", "ModernBertConfig", "ModernBertEncoder"]
