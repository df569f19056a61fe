"""tf.data pipelines for pre-training (documents → instances (NSP/SOP) → masking → batches) and the
readers of fine-tuning data (CSV, TSV, JSONL, TFDS; SQuAD JSON; CoNLL and JSONL token tags) and
the tf.data batches every fine-tuning task builds from them."""

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("data", also=("jax",))

from keras_bert_lib.data.builtin import movie_reviews
from keras_bert_lib.data.finetune_readers import Examples, label_classes, read_examples, read_splits, read_tfds
from keras_bert_lib.data.masking import mask_tokens
from keras_bert_lib.data.pretraining_datasets import PretrainingData, build_pretraining_datasets
from keras_bert_lib.data.pretraining_instances import (
    Instance,
    create_instances,
    pack_instances,
    read_documents,
    tokenize_documents,
)
from keras_bert_lib.data.squad_reader import SquadExample, read_squad
from keras_bert_lib.data.tagged_readers import TaggedSentences, read_tagged
from keras_bert_lib.data.task_batches import array_batches, pair_batches, text_batches
from keras_bert_lib.data.tfrecords import (
    check_tfrecords,
    google_feature_spec,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)

__all__ = [
    "movie_reviews",
    "Examples",
    "SquadExample",
    "TaggedSentences",
    "read_squad",
    "read_tagged",
    "Instance",
    "label_classes",
    "read_examples",
    "read_splits",
    "array_batches",
    "pair_batches",
    "text_batches",
    "read_tfds",
    "PretrainingData",
    "build_pretraining_datasets",
    "check_tfrecords",
    "create_instances",
    "google_feature_spec",
    "mask_tokens",
    "pack_instances",
    "read_documents",
    "read_pretraining_tfrecords",
    "tokenize_documents",
    "write_pretraining_tfrecords",
]
