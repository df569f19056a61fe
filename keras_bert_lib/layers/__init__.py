"""Reusable Keras layers that assemble BERT-family encoders (keras.ops; on TensorFlow,
BiasActivationDense writes its product in the form oneDNN fuses)."""

from keras_bert_lib.layers.bias_activation_dense import BiasActivationDense
from keras_bert_lib.layers.disentangled_self_attention import DisentangledSelfAttention
from keras_bert_lib.layers.feed_forward import FeedForward
from keras_bert_lib.layers.gated_feed_forward import GatedFeedForward
from keras_bert_lib.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_bert_lib.layers.position_embedding import PositionEmbedding
from keras_bert_lib.layers.rotary_embedding import RotaryEmbedding
from keras_bert_lib.layers.rotary_self_attention import RotarySelfAttention
from keras_bert_lib.layers.segment_embedding import SegmentEmbedding
from keras_bert_lib.layers.token_embedding import TokenEmbedding
from keras_bert_lib.layers.transformer_encoder_block import TransformerEncoderBlock

__all__ = [
    "BiasActivationDense",
    "DisentangledSelfAttention",
    "FeedForward",
    "GatedFeedForward",
    "MultiHeadSelfAttention",
    "PositionEmbedding",
    "RotaryEmbedding",
    "RotarySelfAttention",
    "SegmentEmbedding",
    "TokenEmbedding",
    "TransformerEncoderBlock",
]
