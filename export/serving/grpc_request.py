"""The gRPC PredictRequest for the exported classifier, from the texts of predict.json.

    python export/serving/grpc_request.py --server localhost:8500      # send it, print the reply
    python export/serving/grpc_request.py --write request.pb            # or write it to a file

Needs `tensorflow-serving-api` (and `grpcio` to send).
"""

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def predict_request(texts, model_name="classifier", signature_name="serving_default"):
    """A `PredictRequest` with the texts as the string tensor `text` (B,)."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    request.inputs["text"].CopyFrom(tf.make_tensor_proto([t.encode("utf-8") for t in texts], dtype=tf.string))
    return request


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", default=os.path.join(HERE, "predict.json"),
                        help="a REST :predict body whose inputs.text are the texts (default: predict.json here)")
    parser.add_argument(
        "--model-name", default="classifier", help="the model's name in models.config (default: classifier)"
    )
    parser.add_argument(
        "--server", default=None, help="host:port of TF Serving's gRPC port to send it to (default: none)"
    )
    parser.add_argument("--write", default=None, help="a file to write the serialized request to (default: none)")
    args = parser.parse_args()
    with open(args.texts, encoding="utf-8") as f:
        request = predict_request(json.load(f)["inputs"]["text"], args.model_name)
    if args.write:
        with open(args.write, "wb") as f:
            f.write(request.SerializeToString())
    if args.server:
        import grpc
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(args.server))
        print(stub.Predict(request, timeout=30.0))


if __name__ == "__main__":
    main()
