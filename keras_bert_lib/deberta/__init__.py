"""DeBERTa-v3 (He et al., 2021 and 2023) as one family: its config and presets, block, encoder and
checkpoint names. `keras_bert_lib.deberta_v3_base()` builds one; `load_checkpoint` reads HuggingFace's."""

from keras_bert_lib.deberta.block import DebertaBlock
from keras_bert_lib.deberta.config import DEBERTA_V3_PRESETS, DebertaV3Config
from keras_bert_lib.deberta.encoder import DebertaV3Encoder, RelativePositionTable

__all__ = ["DEBERTA_V3_PRESETS", "DebertaBlock", "DebertaV3Config", "DebertaV3Encoder", "RelativePositionTable"]
