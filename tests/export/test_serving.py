"""export/serving/: models.config is TF Serving's ModelServerConfig, and the REST :predict body and
the gRPC PredictRequest, decoded as TF Serving decodes them, give the Keras classifier's outputs
through the exported signature. (TF Serving itself cannot run here.)"""

import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import TextClassifier
from keras_bert_lib.export import export_saved_model
from tests.tasks.test_task_models import _preprocessor, _tiny

SERVING = pathlib.Path(__file__).resolve().parents[2] / "export" / "serving"
pytest.importorskip("tensorflow_serving", reason="tensorflow-serving-api is part of the test install")


def _grpc_module():
    spec = importlib.util.spec_from_file_location("grpc_request", SERVING / "grpc_request.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_models_config_is_tf_servings_and_names_the_classifier():
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    config = text_format.Parse((SERVING / "models.config").read_text(), model_server_config_pb2.ModelServerConfig())
    (model,) = config.model_config_list.config
    assert (model.name, model.base_path, model.model_platform) == ("classifier", "/models/classifier", "tensorflow")


@pytest.mark.slow
def test_the_rest_body_and_the_grpc_request_give_the_keras_outputs(tmp_path):
    from tensorflow_serving.apis import predict_pb2

    model = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    served = tf.saved_model.load(export_saved_model(model, tmp_path))
    body = json.loads((SERVING / "predict.json").read_text(encoding="utf-8"))
    texts = body["inputs"]["text"]
    want = tf.nn.softmax(model.predict(texts, verbose=0)).numpy()
    signature = served.signatures[body["signature_name"]]
    by_rest = signature(**{k: tf.constant(v) for k, v in body["inputs"].items()})
    np.testing.assert_allclose(by_rest["probabilities"].numpy(), want, atol=1e-5)
    wire = _grpc_module().predict_request(texts).SerializeToString()
    request = predict_pb2.PredictRequest.FromString(wire)
    assert (request.model_spec.name, request.model_spec.signature_name) == ("classifier", "serving_default")
    decoded = tf.make_ndarray(request.inputs["text"])
    assert [t.decode("utf-8") for t in decoded] == texts
    by_grpc = served.signatures[request.model_spec.signature_name](text=tf.constant(decoded))
    np.testing.assert_allclose(by_grpc["probabilities"].numpy(), want, atol=1e-5)
    np.testing.assert_array_equal(by_grpc["label"].numpy(), want.argmax(-1))


@pytest.mark.slow
def test_the_grpc_script_writes_the_request(tmp_path):
    result = subprocess.run([sys.executable, str(SERVING / "grpc_request.py"), "--write", str(tmp_path / "r.pb")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest.FromString((tmp_path / "r.pb").read_bytes())
    assert len(tf.make_ndarray(request.inputs["text"])) == 3
