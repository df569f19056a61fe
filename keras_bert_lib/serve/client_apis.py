"""The embedding APIs clients already speak, beside TF Serving's and KServe's: OpenAI's
`POST /v1/embeddings` and `GET /v1/models` (the `openai` package, LangChain, LlamaIndex), and
Hugging Face TEI's `POST /embed` and `POST /rerank`. They run the served SavedModels through the
same batcher, limits and 4xx answers as the other routes."""

import asyncio
import base64
import json
import logging

import numpy as np
from fastapi import Request
from kserve.errors import InvalidInput, ModelNotFound

from keras_bert_lib.serve.protocol import BadRequest

log = logging.getLogger("keras_bert_lib.serve")


def add_client_routes(app, dataplane, specs):
    """Adds OpenAI's and TEI's routes to KServe's FastAPI `app` for the models of `specs`:

    - `GET /v1/models`: the served names, as OpenAI lists models.
    - `POST /v1/embeddings`: `input` (a string or a list of strings), `model` (a served embedder's
      name), `dimensions` (the first d numbers, normalised again), `encoding_format` ("float" or
      "base64": little-endian float32 bytes); answers `data` (one `embedding` per input, in order)
      and `usage` (the tokens the model read, [CLS] and [SEP] included).
    - `POST /embed` (TEI): `inputs` (a string or a list), `normalize` (default true),
      `dimensions`; answers one list of numbers per input.
    - `POST /rerank` (TEI, for a served cross-encoder): `query`, `texts`, `raw_scores` (the logit
      instead of its sigmoid), `return_text`; answers `[{"index", "score"(, "text")}]`, best first.

    `/embed` and `/rerank` take the one embedder (cross-encoder) served, or the one a `model`
    field names. Texts longer than the model's length are cut, as on every route.

    Example:
        ```python
        from keras_bert_lib.serve.client_apis import add_client_routes
        # add_client_routes(kserve.model_server.app, server.dataplane, specs)
        ```
    """
    names = [spec.name for spec in specs]

    def model(name):
        found = dataplane.model_registry.get_model(name) if name in names else None
        if found is None:
            raise ModelNotFound(name)
        return found

    def kind(name):
        served = model(name)
        if "embeddings" in served.outputs and served.inputs == ("text",):
            return "embedder"
        return "cross-encoder" if served.outputs == ("score",) and len(served.inputs) == 2 else "other"

    def pick(body, wanted, route):
        name = body.get("model")
        if name is not None:
            _string(name, "model")
            if kind(name) != wanted:
                raise BadRequest(f"{route} runs {'a sentence embedder' if wanted == 'embedder' else 'a cross-encoder'};"
                                 f" {name} is not one.")
            return model(name)
        fitting = [n for n in names if kind(n) == wanted]
        if len(fitting) != 1:
            which = f"the {wanted}s served: {', '.join(fitting)}" if fitting else f"this server serves no {wanted}"
            raise BadRequest(f"{route} needs one {wanted}; name it with \"model\" ({which}).")
        return model(fitting[0])

    async def run(served, rows):
        served.limits.check_count(len(rows))
        for i, row in enumerate(rows):
            served.limits.check_text(row, i)
        return await served.infer(rows)

    async def list_models():
        return {"object": "list", "data": [{"id": n, "object": "model", "created": 0, "owned_by": "keras-bert"}
                                           for n in names]}

    async def embeddings(request: Request):
        body = await _body(request)
        try:
            name = _string(body.get("model"), "model")
            if kind(name) != "embedder":
                raise BadRequest(f"/v1/embeddings runs a sentence embedder; {name} is not one (its outputs: "
                                 f"{', '.join(model(name).outputs)}).")
            served, rows = model(name), [{"text": t} for t in _texts(body.get("input"), "input")]
            encoding = body.get("encoding_format") or "float"
            if encoding not in ("float", "base64"):
                raise BadRequest(f"encoding_format={encoding!r}: \"float\" or \"base64\".")
            vectors = _vectors(await run(served, rows), body.get("dimensions"), normalize=True)
        except BadRequest as e:
            raise InvalidInput(str(e)) from None
        counts = await asyncio.to_thread(served.token_counts, rows)  # tokenizing: off the event loop
        tokens = sum(counts) if counts is not None else 0
        data = [{"object": "embedding", "index": i, "embedding": _encoded(v, encoding)} for i, v in enumerate(vectors)]
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return {"object": "list", "data": data, "model": name, "usage": usage}

    async def embed(request: Request):
        body = await _body(request)
        try:
            served = pick(body, "embedder", "/embed")
            texts = _texts(body.get("inputs"), "inputs")
            normalize = body.get("normalize", True)
            if not isinstance(normalize, bool):
                raise BadRequest(f"normalize={normalize!r}: true or false.")
            vectors = _vectors(await run(served, [{"text": t} for t in texts]), body.get("dimensions"), normalize)
        except BadRequest as e:
            raise InvalidInput(str(e)) from None
        return [v.tolist() for v in vectors]

    async def rerank(request: Request):
        body = await _body(request)
        try:
            served = pick(body, "cross-encoder", "/rerank")
            query, texts = _string(body.get("query"), "query"), _texts(body.get("texts"), "texts", single=False)
            raw = body.get("raw_scores", False)
            results = await run(served, [{served.inputs[0]: query, served.inputs[1]: t} for t in texts])
        except BadRequest as e:
            raise InvalidInput(str(e)) from None
        logits = np.array([float(r["score"]) for r in results])
        scores = logits if raw else 1.0 / (1.0 + np.exp(-logits))
        order = np.argsort(-scores, kind="stable")
        return [{"index": int(i), "score": float(scores[i]), **({"text": texts[i]} if body.get("return_text") else {})}
                for i in order]

    app.add_api_route("/v1/models", list_models, methods=["GET"])
    app.add_api_route("/v1/embeddings", embeddings, methods=["POST"])
    app.add_api_route("/embed", embed, methods=["POST"])
    app.add_api_route("/rerank", rerank, methods=["POST"])


async def _body(request):
    raw = await request.body()
    try:
        body = json.loads(raw)
    except ValueError:
        raise InvalidInput("The body is not JSON; send a JSON object.") from None
    if not isinstance(body, dict):
        raise InvalidInput(f"The body is a JSON {type(body).__name__}; send a JSON object.")
    return body


def _string(value, field):
    if not isinstance(value, str) or not value:
        raise BadRequest(f"\"{field}\" must be a non-empty string; it is {json.dumps(value)[:80]}.")
    return value


def _texts(value, field, single=True):
    """A list of strings from a string (where `single`) or a list of strings."""
    if single and isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        shape = "a string or a list of strings" if single else "a list of strings"
        raise BadRequest(f"\"{field}\" must be {shape} (token ids are not taken: send the text).")
    return value


def _vectors(results, dimensions, normalize):
    """The embeddings (N, H), cut to `dimensions` and normalised to unit length (where asked)."""
    vectors = np.stack([np.asarray(r["embeddings"], "float32") for r in results])
    if dimensions is not None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= vectors.shape[1]:
            raise BadRequest(f"dimensions={dimensions!r}: an int from 1 to this model's {vectors.shape[1]}.")
        vectors, normalize = vectors[:, :dimensions], True
    if normalize:
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


def _encoded(vector, encoding):
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, "<f4").tobytes()).decode("ascii")
    return vector.tolist()
