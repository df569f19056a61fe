"""TokenClassifier: a tag for every word — named entities (CoNLL-2003), parts of speech (BERT §5.3)."""

import re

import keras
import numpy as np

from keras_bert_lib.heads import TokenClassificationHead
from keras_bert_lib.metrics import tags_to_entities
from keras_bert_lib.tasks.task_model import HEAD_DTYPE, TaskModel, default_optimizer

_WORD = re.compile(r"\S+")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TokenClassifier(TaskModel):
    """logits = W·Dropout(h_t) + b at every word piece; a word's tag is its first piece's.

    Trained on `features(words, tags)`: each word's tag on its first piece, the other pieces
    weighted 0 in the loss (sparse categorical cross-entropy) and in the accuracy. `tag(texts)`
    splits raw text into words at whitespace and returns entities with their character offsets:
    for IOB labels (`B-PER`, `I-PER`, `O`) the spans `tags_to_entities` reads; for any other tag
    set (parts of speech) every word with its tag.

    Args:
        encoder: BertEncoder.
        labels: list of str: the tags, in the order of the logits.
        preprocessor: BertPreprocessor or None; its tokenizer and `sequence_length` build the
            inputs. Without one the model takes the id dict only.
        dropout: float. Dropout before the dense layer.
        trainable_blocks: None, k or 0; see `set_trainable_blocks`.
    Call arguments:
        inputs: the id dict.
    Returns:
        float32 logits (B, T, len(labels)).
    Example:
        ```python
        from keras_bert_lib import TokenClassifier, bert_tiny
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "sinan", "met", "ann", "in", "paris"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=12)
        tagger = TokenClassifier(bert_tiny(vocab_size=len(vocab), num_hidden_layers=1), ["O", "B-PER", "I-PER"],
                                 preprocessor)
        tagger.tag(["Sinan met Ann in Paris"])   # [[(text, label, start_char, end_char), ...]]; untrained
        ```
    Reference:
        Devlin et al., 2019, §5.3; Tjong Kim Sang & De Meulder, 2003 (CoNLL-2003)
    """

    def __init__(self, encoder, labels, preprocessor=None, dropout=0.1, trainable_blocks=None, **kwargs):
        labels = list(labels)
        if len(set(labels)) != len(labels) or not labels:
            raise ValueError(f"labels must be distinct tags, at least one; got {labels}.")
        # === Layers ===
        head = TokenClassificationHead(len(labels), dropout, encoder.config.initializer_range, name="tagger",
                                       dtype=HEAD_DTYPE)
        # === Functional graph ===
        inputs = self._encoder_inputs()
        super().__init__(inputs=inputs, outputs=head(encoder(inputs)["sequence_output"]), **kwargs)
        # === Config ===
        self.head = head
        self.labels = labels
        self.dropout = dropout
        self._finish_init(encoder, preprocessor, trainable_blocks, uses_pooler=False)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Sparse categorical cross-entropy and accuracy (both over first pieces, through the
        features' sample weights), unless told otherwise. The loss is the mean over the labelled
        pieces of the batch, as HuggingFace's token classification (-100 ignored) and Google's
        masked LM, not over every position (which would scale each batch by its share of them)."""
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
        if metrics == "auto":
            kwargs.setdefault("weighted_metrics", [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
            metrics = None
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def features(self, sentences, tags=None):
        """Packed sentences (lists of words), with `tags` for training:
        `fit(f.inputs, f.labels, sample_weight=f.weights)`. See `token_features`."""
        from keras_bert_lib.text import token_features  # TensorFlow-only; the model itself runs on any backend

        tokenizer, length = self._tokenizer_and_length()
        return token_features(sentences, tokenizer, length, tags, self.labels if tags is not None else None)

    def predict_tags(self, sentences, batch_size=32):
        """The tag of every word of each sentence (lists of words), from its first word piece."""
        features = self.features(sentences)
        logits = self.predict(features.inputs, batch_size=batch_size, verbose=0)
        best = np.argmax(logits, axis=-1)
        return [[self.labels[best[n, p]] if p >= 0 else "O" for p in features.first_piece[n, :len(sentence)]]
                for n, sentence in enumerate(sentences)]

    def tag(self, texts, batch_size=32):
        """Entities of each raw text as (text, label, start_char, end_char), words split at whitespace;
        one text (a str) gives one list."""
        if isinstance(texts, str):
            return self.tag([texts], batch_size)[0]
        spans = [[(m.start(), m.end()) for m in _WORD.finditer(text)] for text in texts]
        sentences = [[text[a:b] for a, b in words] for text, words in zip(texts, spans)]
        predicted = self.predict_tags(sentences, batch_size)
        iob = all(t == "O" or t[:2] in ("B-", "I-") for t in self.labels)
        out = []
        for text, words, tags in zip(texts, spans, predicted):
            if iob:
                found = [(kind, words[i][0], words[j - 1][1]) for kind, i, j in tags_to_entities(tags)]
            else:
                found = [(tag, a, b) for tag, (a, b) in zip(tags, words)]
            out.append([(text[a:b], kind, a, b) for kind, a, b in found])
        return out

    def checkpoint_class_names(self):
        raise ValueError(
            "A HuggingFace BertForTokenClassification export is not written yet: save the model as .keras, or its "
            "encoder alone with save_checkpoint(model.encoder, folder)."
        )

    def get_config(self):
        return {**self._base_config(), "labels": self.labels, "dropout": self.dropout}
