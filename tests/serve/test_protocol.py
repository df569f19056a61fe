"""TF Serving's REST bodies (row and columnar formats, b64 strings) to rows and back, and the
message of every body the server refuses."""

import base64

import numpy as np
import pytest

from keras_bert_lib.serve.protocol import BadRequest, Limits, v1_response, v1_rows

ONE, TWO = ("text",), ("text", "text_pair")


@pytest.mark.parametrize("body, inputs, rows, columnar", [
    ({"instances": ["a", "b"]}, ONE, [{"text": "a"}, {"text": "b"}], False),
    ({"instances": [{"text": "a"}]}, ONE, [{"text": "a"}], False),
    ({"signature_name": "serving_default", "inputs": {"text": ["a", "b"]}}, ONE, [{"text": "a"}, {"text": "b"}], True),
    ({"inputs": ["a"]}, ONE, [{"text": "a"}], True),
    ({"instances": [{"text": "q", "text_pair": "p"}]}, TWO, [{"text": "q", "text_pair": "p"}], False),
    ({"inputs": {"text": ["q"], "text_pair": ["p"]}}, TWO, [{"text": "q", "text_pair": "p"}], True),
    ({"instances": [{"b64": base64.b64encode("café".encode()).decode()}]}, ONE, [{"text": "café"}], False),
    ('{"instances": ["from bytes"]}'.encode(), ONE, [{"text": "from bytes"}], False),
])
def test_both_formats_of_tf_serving_give_the_same_rows(body, inputs, rows, columnar):
    assert v1_rows(body, inputs, Limits()) == (rows, columnar)


@pytest.mark.parametrize("body, inputs, words", [
    (b"{not json", ONE, "not JSON"),
    ([1, 2], ONE, "JSON list, not an object"),
    ({"instances": "a"}, ONE, "\"instances\" is a JSON string, not a list"),
    ({"text": ["a"]}, ONE, "either \"instances\""),
    ({"instances": ["a"], "inputs": ["a"]}, ONE, "not both or neither"),
    ({"instances": [{"sentence": "a"}]}, ONE, "has sentence; this model takes text. Unknown: sentence. Missing: text"),
    ({"instances": [3]}, ONE, "instance 0.text is a JSON number, not a string"),
    ({"instances": [None]}, ONE, "instance 0.text is a JSON null"),
    ({"instances": ["a"]}, TWO, "takes text and text_pair: send an object"),
    ({"inputs": {"text": ["a"], "text_pair": ["b", "c"]}}, TWO, "differ in length ([1, 2])"),
    ({"instances": []}, ONE, "holds no texts"),
    ({"instances": ["a"] * 10_000}, ONE, "10,000 texts; this server takes at most 1,024 a request (--max-instances)"),
    ({"instances": ["x" * 1_000_000]}, ONE, "Text 0 (text) has 1,000,000 bytes; this server takes at most 65,536"),
    ({"instances": [{"b64": "***"}]}, ONE, "is not base64"),
    ({"signature_name": "serving_ids", "instances": ["a"]}, ONE, "serving_default (raw strings) only"),
])
def test_every_bad_body_is_refused_with_a_message_that_names_the_problem(body, inputs, words):
    with pytest.raises(BadRequest) as error:
        v1_rows(body, inputs, Limits())
    assert words in str(error.value)


def test_answers_are_tf_servings_shapes():
    results = [{"label": np.int32(1), "probabilities": np.array([0.25, 0.75], np.float32)},
               {"label": np.int32(0), "probabilities": np.array([0.5, 0.5], np.float32)}]
    assert v1_response(results, columnar=False) == {"predictions": [
        {"label": 1, "probabilities": [0.25, 0.75]}, {"label": 0, "probabilities": [0.5, 0.5]}]}
    assert v1_response(results, columnar=True) == {"outputs": {"label": [1, 0],
                                                               "probabilities": [[0.25, 0.75], [0.5, 0.5]]}}
    one = [{"embeddings": np.array([1.0, 0.0], np.float32)}]
    assert v1_response(one, columnar=False) == {"predictions": [[1.0, 0.0]]}
    assert v1_response(one, columnar=True) == {"outputs": [[1.0, 0.0]]}
    assert v1_response([{"tag": np.array([b"B-X", b"O"])}], columnar=False) == {"predictions": [["B-X", "O"]]}


def test_open_inference_requests_give_rows_and_tensors_come_back_per_output():
    from kserve import InferInput, InferRequest

    from keras_bert_lib.serve.protocol import v2_response, v2_rows

    def request(*tensors):
        return InferRequest("m", [InferInput(name, shape, dtype, data) for name, shape, dtype, data in tensors])

    rows = v2_rows(request(("text", [2], "BYTES", ["q1", "q2"]), ("text_pair", [2], "BYTES", ["p1", "p2"])), TWO,
                   Limits())
    assert rows == [{"text": "q1", "text_pair": "p1"}, {"text": "q2", "text_pair": "p2"}]
    for tensors, words in [
        ([("text", [1], "INT32", [1])], "Input text is INT32; it takes texts: datatype BYTES"),
        ([("text", [2, 1], "BYTES", ["a", "b"])], "has shape [2, 1] and 2 values; send shape [N]"),
        ([("sentence", [1], "BYTES", ["a"])], "Unknown: sentence. Missing: text"),
        ([("text", [2], "BYTES", ["a", "b"]), ("text_pair", [1], "BYTES", ["c"])], "differ in length ([1, 2])"),
        ([("text", [0], "BYTES", [])], "holds no texts"),
    ]:
        with pytest.raises(BadRequest) as error:
            v2_rows(request(*tensors), TWO if len(tensors) == 2 else ONE, Limits())
        assert words in str(error.value)
    answer = v2_response([{"label": np.int32(2), "probabilities": np.array([0.1, 0.9], np.float32)}] * 2, "m")
    outputs = {o.name: o for o in answer.outputs}
    assert (outputs["label"].datatype, outputs["label"].shape, list(outputs["label"].data)) == ("INT32", [2], [2, 2])
    assert (outputs["probabilities"].datatype, outputs["probabilities"].shape) == ("FP32", [2, 2])
