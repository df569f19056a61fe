"""keras_bert_lib: BERT-family encoders for Keras 3, built from readable layers.

The encoders, heads and checkpoint loading run on every Keras backend; text, data pipelines,
training and export need TensorFlow (and are imported only when used).

Example:
    ```python
    from keras_bert_lib import bert_tiny
    encoder = bert_tiny()
    ```
"""

import gc
import os

# TensorFlow turns its oneDNN CPU kernels on by default only on some CPUs; where it leaves them
# off, BERT training steps are faster with them (docs/pretraining.md, "Speed"). Only a default:
# an exported TF_ENABLE_ONEDNN_OPTS wins, and it acts only if TensorFlow is not imported yet
# (where it came too late, `compile_path.warn_if_onednn_came_too_late` says so, below).
_ONEDNN_SETTING = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

# Importing Keras (and TensorFlow or JAX) creates hundreds of thousands of long-lived objects and
# next to no cyclic garbage, yet the cycle collector would walk the whole growing heap again and
# again on the way: it is paused for that import alone.
_GC_WAS_ENABLED = gc.isenabled()
gc.disable()
try:
    import keras  # noqa: E402
finally:
    if _GC_WAS_ENABLED:
        gc.enable()

import keras_bert_lib.distillation  # noqa: E402, F401  (registers the distillers and their loss)
from keras_bert_lib.config import PRESETS, EncoderConfig  # noqa: E402
from keras_bert_lib.models import (  # noqa: E402
    BertEncoder,
    albert_base,
    albert_large,
    albert_xlarge,
    albert_xxlarge,
    bert_base,
    bert_large,
    bert_medium,
    bert_mini,
    bert_small,
    bert_tiny,
    build_encoder,
    distilbert_base,
    electra_base,
    electra_large,
    electra_small,
    load_checkpoint,
    modernbert_base,
    modernbert_large,
    roberta_base,
    save_checkpoint,
)
from keras_bert_lib.pretraining import BertPretrainer  # noqa: E402
from keras_bert_lib.tasks import (  # noqa: E402
    CrossEncoder,
    SentenceEmbedder,
    SpanQuestionAnswerer,
    TextClassifier,
    TokenClassifier,
)

if keras.backend.backend() == "tensorflow":
    # Every class a saved model names is registered by `import keras_bert_lib`, so that
    # keras.models.load_model reads a run's model.keras: its preprocessor (text) and its
    # optimizer and schedule (training) are TensorFlow-only, the rest comes with `models`.
    import keras_bert_lib.text  # noqa: E402, F401
    import keras_bert_lib.training  # noqa: E402, F401

from keras_bert_lib.runtime.compile_path import warn_if_onednn_came_too_late  # noqa: E402

warn_if_onednn_came_too_late(_ONEDNN_SETTING)

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "EncoderConfig",
    "BertEncoder",
    "BertPretrainer",
    "TextClassifier",
    "SentenceEmbedder",
    "CrossEncoder",
    "SpanQuestionAnswerer",
    "TokenClassifier",
    "build_encoder",
    "load_checkpoint",
    "load_preprocessor",
    "save_checkpoint",
    "bert_tiny",
    "bert_mini",
    "bert_small",
    "bert_medium",
    "bert_base",
    "bert_large",
    "albert_base",
    "albert_large",
    "albert_xlarge",
    "albert_xxlarge",
    "distilbert_base",
    "roberta_base",
    "electra_small",
    "electra_base",
    "electra_large",
    "modernbert_base",
    "modernbert_large",
]


def __getattr__(name):
    # The one TensorFlow-only name at the root: imported on first use, so that
    # `import keras_bert_lib` needs neither TensorFlow nor tensorflow-text.
    if name == "load_preprocessor":
        from keras_bert_lib.text import load_preprocessor

        return load_preprocessor
    raise AttributeError(f"module 'keras_bert_lib' has no attribute {name!r}")
