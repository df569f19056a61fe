"""What TF Serving answers and KServe does not: versions and labels in the URL, and the model
status body; a malformed V2 body as a 400 in TF Serving's error shape; a bad request or an
unknown model logged in one line, not as a traceback; readiness that says whether every model is
served; no route that changes what is served (KServe's repository load and unload)."""

import logging

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kserve.errors import InvalidInput, ModelNotFound
from kserve.protocol.rest.server import RESTServer
from kserve.protocol.rest.v1_endpoints import V1Endpoints
from kserve.protocol.rest.v2_datamodels import InferenceRequest
from kserve.protocol.rest.v2_endpoints import V2Endpoints


def add_routes(app, dataplane, specs):
    """Adds to KServe's FastAPI `app`, before KServe's own routes (so these win where the paths
    meet): `POST /v1/models/NAME/versions/N:predict`, `.../labels/L:predict`,
    `POST /v2/models/NAME/versions/N/infer`, `GET /v1/models/NAME[/versions/N]` answering TF
    Serving's `model_version_status` beside KServe's `name` and `ready`, `GET /v2/health/ready`
    (200 only while every version of `specs` is loaded and ready, else 503 naming those that are
    not), a 405 for any other method on the routes that predict, and a 404 on KServe's repository
    routes that load and unload models: nothing changes what is served. Each version is in
    KServe's registry as `NAME@N` (`serve` registers them).

    Example:
        ```python
        from keras_bert_lib.serve.routes import add_routes
        # add_routes(kserve.model_server.app, server.dataplane, specs)
        ```
    """
    v1, v2 = V1Endpoints(dataplane), V2Endpoints(dataplane)
    by_name = {spec.name: spec for spec in specs}

    def spec_of(name):
        if name not in by_name:
            raise ModelNotFound(name)
        return by_name[name]

    def version(name, number=None, label=None):
        spec = spec_of(name)
        if label is not None:
            if label not in spec.labels:
                raise ModelNotFound(f"{name} (label {label}; its labels: {sorted(spec.labels) or 'none'})")
            return spec.labels[label]
        if number is not None and number not in spec.versions:
            raise ModelNotFound(f"{name} (version {number}; it serves {sorted(spec.versions)})")
        return spec.default if number is None else number

    async def predict_version(name: str, number: int, request: Request):
        return await v1.predict(f"{name}@{version(name, number)}", request)

    async def predict_label(name: str, label: str, request: Request):
        return await v1.predict(f"{name}@{version(name, label=label)}", request)

    async def infer_version(raw_request: Request, raw_response: Response, name: str, number: int,
                            request_body: InferenceRequest):
        return await v2.infer(raw_request, raw_response, f"{name}@{version(name, number)}", request_body)

    async def status(name: str, number: int | None = None):
        versions = [version(name, number)] if number is not None else sorted(spec_of(name).versions)
        return {"name": name, "ready": True, "model_version_status": [
            {"version": str(v), "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
            for v in versions]}

    async def ready():
        registry = dataplane.model_registry
        waiting = [name for name in registered_names(specs)
                   if registry.get_model(name) is None or not registry.get_model(name).ready]
        if waiting:
            return JSONResponse({"ready": False, "error": f"Not ready: {', '.join(waiting)}."}, status_code=503)
        return {"ready": True}

    log = logging.getLogger("keras_bert_lib.serve")

    async def post_only(request: Request):
        message = f"{request.url.path} takes POST, not {request.method}."
        log.info("405 %s %s: %s", request.method, request.url.path, message)
        return JSONResponse({"error": message}, status_code=405, headers={"Allow": "POST"})

    async def no_repository(request: Request):
        message = (f"{request.url.path}: this server does not load or unload models; it serves what its command "
                   "named (restart it to change that).")
        log.info("404 %s %s: %s", request.method, request.url.path, message)
        return JSONResponse({"error": message}, status_code=404)

    async def bad_body(request, error):  # FastAPI's 422 for a V2 body that is not the protocol's
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in error.errors())
        message = f"The body is not an inference request: {problems}."
        log.info("400 %s %s: %s", request.method, request.url.path, message)
        return JSONResponse({"error": message}, status_code=400)

    for path in PREDICT_ROUTES:  # before the status route, which would take "NAME:predict" for a name
        app.add_api_route(path, post_only, methods=["GET", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    app.add_api_route("/v2/health/ready", ready, methods=["GET"])
    for path in ("/v2/repository/models/{name}/load", "/v2/repository/models/{name}/unload"):
        app.add_api_route(path, no_repository, methods=["GET", "POST"], include_in_schema=False)
    app.add_api_route("/v1/models/{name}/versions/{number}:predict", predict_version, methods=["POST"])
    app.add_api_route("/v1/models/{name}/labels/{label}:predict", predict_label, methods=["POST"])
    app.add_api_route("/v2/models/{name}/versions/{number}/infer", infer_version, methods=["POST"],
                      response_model=None)
    app.add_api_route("/v1/models/{name}", status, methods=["GET"])
    app.add_api_route("/v1/models/{name}/versions/{number}", status, methods=["GET"])
    app.add_exception_handler(RequestValidationError, bad_body)


PREDICT_ROUTES = ("/v1/models/{name}:predict", "/v1/models/{name}/versions/{number}:predict",
                  "/v1/models/{name}/labels/{label}:predict", "/v2/models/{name}/infer",
                  "/v2/models/{name}/versions/{number}/infer")


def registered_names(specs):
    """The names `serve` registers in KServe for `specs`: NAME (the default version) and NAME@N."""
    return [spec.name for spec in specs] + [f"{spec.name}@{v}" for spec in specs for v in sorted(spec.versions)]


class QuietRESTServer(RESTServer):
    """KServe's REST server with what `keras-bert serve` adds: a client's bad request
    (`InvalidInput`, a 400) and an unknown model (a 404, whose answer lists the models served)
    are one line in the log at INFO, where KServe logs each at ERROR with its traceback; no
    per-request timing middleware; `middleware` wraps the app (`connections.BodyLimits`);
    `start` listens on the given sockets.

    Example:
        ```python
        from keras_bert_lib.serve.routes import QuietRESTServer
        # QuietRESTServer("kserve.model_server:app", dataplane, repository_extension, 8501, served=["classifier"])
        ```
    """

    def __init__(self, *args, served=(), middleware=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.served, self.middleware = list(served), list(middleware)

    def _add_middlewares(self, app):
        # not KServe's TimingMiddleware: its per-request timings are lines this server does not
        # print, and it reads the process's CPU time twice a request (getrusage: every thread's)
        for middleware, options in self.middleware:
            app.add_middleware(middleware, **options)

    def _add_exception_handlers(self, app):
        super()._add_exception_handlers(app)
        log = logging.getLogger("keras_bert_lib.serve")

        async def bad_request(request, error):
            log.info("400 %s %s: %s", request.method, request.url.path, error)
            return JSONResponse({"error": str(error)}, status_code=400)

        async def not_found(request, error):
            message = f"{error} This server serves {', '.join(self.served)}."
            log.info("404 %s %s: %s", request.method, request.url.path, message)
            return JSONResponse({"error": message}, status_code=404)

        app.add_exception_handler(InvalidInput, bad_request)
        app.add_exception_handler(ModelNotFound, not_found)

    async def start(self, sockets=None):
        self.create_application()
        await self._server.serve(sockets=sockets)
