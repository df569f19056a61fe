"""Request bodies to rows of texts and results back to response bodies: TF Serving's REST API
(KServe's V1 protocol) and the Open Inference Protocol (KServe's V2).

A row is {input name: str}. Every problem with a body is a `BadRequest` whose message names it,
before anything reaches the model.
"""

import base64
import json

import numpy as np

from keras_bert_lib.export.saved_model import plain


class BadRequest(ValueError):
    """A request body the server cannot run; the message names the problem (HTTP 400).

    Example:
        ```python
        from keras_bert_lib.serve.protocol import BadRequest, Limits, v1_rows
        try:
            v1_rows({"instances": []}, ("text",), Limits())
        except BadRequest as e:
            print(e)   # The request holds no texts; send at least one.
        ```
    """


def v1_rows(body, inputs, limits):
    """(rows, columnar) from a TF Serving REST `:predict` body: `{"instances": [...]}` (the row
    format: each instance a string, or an object of input names) or `{"inputs": ...}` (the
    columnar format: a list of strings, or an object of input names to lists). `inputs` are the
    signature's input names; a string may also come as `{"b64": ...}`.

    Example:
        ```python
        from keras_bert_lib.serve.protocol import Limits, v1_rows
        v1_rows({"instances": ["a fine film"]}, ("text",), Limits())   # ([{"text": "a fine film"}], False)
        ```
    """
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError as e:
            raise BadRequest(f"The body is not JSON ({e}); send {{\"instances\": [\"a text\", ...]}}.") from None
        except RecursionError:
            raise BadRequest("The body's JSON is nested too deeply; send {\"instances\": [\"a text\", ...]}.") from None
    if not isinstance(body, dict):
        raise BadRequest(f"The body is a JSON {type(body).__name__}, not an object; send "
                         "{\"instances\": [\"a text\", ...]}.")
    signature = body.get("signature_name", "serving_default")
    if signature != "serving_default":
        raise BadRequest(f"signature_name {signature!r}: this server runs serving_default (raw strings) only.")
    if ("instances" in body) == ("inputs" in body):
        raise BadRequest("The body needs either \"instances\" (a list, one per text) or \"inputs\" (columns), "
                         "not both or neither.")
    if "instances" in body:
        instances = body["instances"]
        if not isinstance(instances, list):
            raise BadRequest(f"\"instances\" is a JSON {_kind(instances)}, not a list.")
        limits.check_count(len(instances))
        rows = [_row(instance, inputs, f"instance {i}") for i, instance in enumerate(instances)]
        columnar = False
    else:
        columns = body["inputs"]
        if not isinstance(columns, dict):
            columns = {inputs[0]: columns} if len(inputs) == 1 else columns
        if not isinstance(columns, dict):
            raise BadRequest(f"\"inputs\" is a JSON {_kind(columns)}; this model takes {_names(inputs)}: send an "
                             "object of those names to lists of strings.")
        _check_names(columns, inputs, "\"inputs\"")
        for name, column in columns.items():
            if not isinstance(column, list):
                raise BadRequest(f"\"inputs\".{name} is a JSON {_kind(column)}, not a list of strings.")
        rows, columnar = _column_rows(columns, inputs, limits, "\"inputs\"."), True
    for i, row in enumerate(rows):
        limits.check_text(row, i)
    return rows, columnar


def v1_response(results, columnar):
    """The TF Serving REST answer to `v1_rows`' request: `{"predictions": [...]}` (one object of
    outputs per instance, or the value itself for a single output) or, for the columnar format,
    `{"outputs": {...}}` (one column per output, or the column itself for a single output).

    Example:
        ```python
        from keras_bert_lib.serve.protocol import v1_response
        v1_response([{"label": 1, "score": 0.5}], columnar=True)   # {"outputs": {"label": [1], "score": [0.5]}}
        v1_response([{"label": 1}], columnar=True)   # {"outputs": [1]}
        ```
    """
    names = list(results[0]) if results else []
    if columnar:
        columns = {name: [plain(r[name]) for r in results] for name in names}
        return {"outputs": columns[names[0]] if len(names) == 1 else columns}
    if len(names) == 1:
        return {"predictions": [plain(r[names[0]]) for r in results]}
    return {"predictions": [{name: plain(r[name]) for name in names} for r in results]}


def v2_rows(request, inputs, limits):
    """Rows from an Open Inference Protocol request (kserve's `InferRequest`): one BYTES tensor
    of shape [N] per input name.

    Example:
        ```python
        from kserve import InferInput, InferRequest
        from keras_bert_lib.serve.protocol import Limits, v2_rows
        text = InferInput("text", [1], "BYTES", ["a fine film"])
        v2_rows(InferRequest("classifier", [text]), ("text",), Limits())   # [{"text": "a fine film"}]
        ```
    """
    tensors = {tensor.name: tensor for tensor in request.inputs}
    _check_names(tensors, inputs, "The request's inputs")
    columns = {}
    for name in inputs:
        tensor = tensors[name]
        if tensor.datatype != "BYTES":
            raise BadRequest(f"Input {name} is {tensor.datatype}; it takes texts: datatype BYTES.")
        data = tensor.data
        values = data.tolist() if isinstance(data, np.ndarray) else list(data)
        if len(tensor.shape) != 1 or tensor.shape[0] != len(values):
            raise BadRequest(f"Input {name} has shape {list(tensor.shape)} and {len(values)} values; send shape "
                             "[N] with N texts.")
        columns[name] = values
    rows = _column_rows(columns, inputs, limits, "")
    for i, row in enumerate(rows):
        limits.check_text(row, i)
    return rows


def v2_response(results, model_name, request_id=None):
    """The Open Inference Protocol answer (kserve's `InferResponse`): one tensor per output,
    rows stacked (FP32, INT32, or BYTES for strings).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.serve.protocol import v2_response
        v2_response([{"label": np.int32(1)}], "classifier").outputs[0].data   # [1]
        ```
    """
    from kserve import InferOutput, InferResponse

    outputs = []
    for name in (list(results[0]) if results else []):
        values = np.stack([np.asarray(r[name]) for r in results])
        if values.dtype.kind in "SUO":
            values = values.astype(object)
        output = InferOutput(name, list(values.shape), _V2_TYPES.get(values.dtype.kind, "FP32"))
        output.set_data_from_numpy(values if values.dtype.kind in "SUOi" else values.astype(np.float32),
                                   binary_data=False)
        outputs.append(output)
    return InferResponse(request_id or "", model_name, outputs)


_V2_TYPES = {"f": "FP32", "i": "INT32", "u": "INT32", "S": "BYTES", "U": "BYTES", "O": "BYTES"}


class Limits:
    """What one request may hold: at most `max_instances` texts, each of at most `max_text_bytes`
    bytes of UTF-8 (a model reads its first few hundred tokens only; a 1 MB text is a mistake).

    Example:
        ```python
        from keras_bert_lib.serve.protocol import Limits
        Limits(max_instances=1024, max_text_bytes=65536).check_count(10)
        ```
    """

    def __init__(self, max_instances=1024, max_text_bytes=65536):
        self.max_instances, self.max_text_bytes = max_instances, max_text_bytes

    def check_count(self, count):
        if count == 0:
            raise BadRequest("The request holds no texts; send at least one.")
        if count > self.max_instances:
            raise BadRequest(f"The request holds {count:,} texts; this server takes at most {self.max_instances:,} "
                             "a request (--max-instances): split it.")

    def check_text(self, row, index):
        for name, text in row.items():
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > self.max_text_bytes:
                raise BadRequest(f"Text {index} ({name}) has {size:,} bytes; this server takes at most "
                                 f"{self.max_text_bytes:,} (--max-text-bytes). The model reads only its first "
                                 "tokens: send the start of the text, or split it.")


def _column_rows(columns, inputs, limits, where):
    counts = {len(column) for column in columns.values()}
    if len(counts) > 1:
        raise BadRequest(f"The columns {_names([where + n for n in inputs])} differ in length ({sorted(counts)}).")
    count = counts.pop()
    limits.check_count(count)
    return [{name: _text(columns[name][i], f"{where}{name}[{i}]") for name in inputs} for i in range(count)]


def _row(instance, inputs, where):
    if not isinstance(instance, dict) or "b64" in instance:
        if len(inputs) != 1:
            raise BadRequest(f"{where} is a JSON {_kind(instance)}; this model takes {_names(inputs)}: send an object "
                             f"such as {{{', '.join(f'{n!r}: ...' for n in inputs)}}}.".replace("'", '"'))
        instance = {inputs[0]: instance}
    _check_names(instance, inputs, where)
    return {name: _text(instance[name], f"{where}.{name}") for name in inputs}


def _check_names(given, inputs, where):
    unknown = sorted(set(given) - set(inputs))
    missing = [name for name in inputs if name not in given]
    if unknown or missing:
        raise BadRequest(f"{where} has {_names(sorted(given)) or 'no inputs'}; this model takes {_names(inputs)}."
                         + (f" Unknown: {', '.join(unknown)}." if unknown else "")
                         + (f" Missing: {', '.join(missing)}." if missing else ""))


def _text(value, where):
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True).decode("utf-8", "replace")
        except ValueError:
            raise BadRequest(f"{where}: its \"b64\" is not base64.") from None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise BadRequest(f"{where} is a JSON {_kind(value)}, not a string.")
    return value


def _kind(value):
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__)


def _names(names):
    return " and ".join(", ".join(names).rsplit(", ", 1)) if names else ""
