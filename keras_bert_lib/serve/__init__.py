"""Serving: `keras-bert serve` puts exported SavedModels behind KServe's `ModelServer` with TF
Serving's REST API and model layout, the Open Inference Protocol, batching of concurrent
requests, health and Prometheus metrics (the `serve` extra; docs/serve.md).

    keras-bert export runs/classify --format saved_model --output exported
    keras-bert serve classifier=exported/saved_model --port 8501
    curl -d @export/serving/predict.json http://127.0.0.1:8501/v1/models/classifier:predict

Example:
    ```python
    from keras_bert_lib.serve import model_specs, serve
    # serve(model_specs(["classifier=exported/saved_model"]), port=8501)
    ```
"""

from keras_bert_lib.serve.batcher import Batcher
from keras_bert_lib.serve.protocol import BadRequest, Limits
from keras_bert_lib.serve.server import ModelSpec, model_specs, serve

__all__ = ["BadRequest", "Batcher", "Limits", "ModelSpec", "model_specs", "serve"]
