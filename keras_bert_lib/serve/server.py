"""`keras-bert serve`: exported SavedModels, or fine-tuning runs' Keras models on the path their
`predict` takes, behind KServe's `ModelServer`, with TF Serving's model layout, versions and REST API."""

import asyncio
import dataclasses
import functools
import logging
import os
import signal
import sys
import warnings

from keras_bert_lib.export.saved_model import saved_model_versions
from keras_bert_lib.serve.connections import BodyLimits, RequestDeadline, listening_socket
from keras_bert_lib.serve.protocol import Limits

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class ModelSpec:
    """One model to serve: its `name` and {version: SavedModel folder}, `labels` {label: version}.

    Example:
        ```python
        from keras_bert_lib.serve.server import ModelSpec
        ModelSpec("classifier", {1: "exported/saved_model/1"})
        ```
    """

    name: str
    versions: dict
    labels: dict = dataclasses.field(default_factory=dict)

    @property
    def default(self):
        """The version a request without one gets: the highest, as in TF Serving."""
        return max(self.versions)


def model_specs(models=(), model_config_file=None):
    """The `ModelSpec`s of `keras-bert serve`'s arguments: each `[NAME=]PATH` (an exported
    SavedModel, TF Serving's model folder of numbered versions, the highest served, or a
    fine-tuning run's folder or `.keras` file, served on its Keras model) and the models of TF
    Serving's `--model_config_file` (its `model_version_policy`: latest N, all or specific
    versions, and `version_labels`). A ValueError names a path that is not a model, or a name
    given twice.

    Example:
        ```python
        from keras_bert_lib.serve.server import model_specs
        # model_specs(["classifier=exported/saved_model"])[0].versions   # {1: "exported/saved_model/1"}
        ```
    """
    specs = [_spec(argument) for argument in models]
    if model_config_file:
        specs += _config_specs(model_config_file)
    if not specs:
        raise ValueError("Nothing to serve: give a model folder (keras-bert serve exported/saved_model) or "
                         "--model-config-file models.config.")
    names = [spec.name for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"The model name {', '.join(twice)} is given twice; name them apart: NAME=PATH.")
    return specs


def _spec(argument):
    name, _, path = argument.partition("=") if "=" in argument and not os.path.exists(argument) else ("", "", argument)
    path = os.path.normpath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such folder; pass an exported SavedModel (keras-bert export --format "
                         "saved_model), TF Serving's model folder of versions, or a fine-tuning run's folder.")
    versions = saved_model_versions(path)
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        folder = os.path.basename(path)
        version = int(folder) if folder.isdigit() else 1
        base = os.path.dirname(path) if folder.isdigit() else path
        return ModelSpec(name or _name_of(base), {version: path})
    if versions:
        return ModelSpec(name or _name_of(path), {max(versions): versions[max(versions)]})
    if os.path.isfile(path) or os.path.isfile(os.path.join(path, "model.keras")):
        return ModelSpec(name or _name_of(path), {1: path})  # served on the Keras model (`ServedKerasModel`)
    raise ValueError(f"{path} is not a model: no saved_model.pb, no numbered version folders, no model.keras. Pass "
                     "an exported SavedModel, TF Serving's model folder, or a fine-tuning run's folder.")


def _name_of(path):
    name = os.path.basename(os.path.abspath(path))
    return os.path.basename(os.path.dirname(os.path.abspath(path))) if name == "saved_model" else name


def _config_specs(config_file):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    if not os.path.isfile(config_file):
        raise ValueError(f"{config_file}: no such file; --model-config-file takes TF Serving's models.config.")
    config = model_server_config_pb2.ModelServerConfig()
    try:
        with open(config_file, encoding="utf-8") as f:
            text_format.Parse(f.read(), config)
    except (OSError, text_format.ParseError) as e:
        raise ValueError(f"{config_file}: not TF Serving's model config ({e}).") from None
    specs = []
    for entry in config.model_config_list.config:
        found = saved_model_versions(entry.base_path)
        if not found:
            raise ValueError(f"{config_file}: model {entry.name}'s base_path {entry.base_path} holds no numbered "
                             "SavedModel version folders.")
        policy = entry.model_version_policy.WhichOneof("policy_choice")
        if policy == "all":
            chosen = sorted(found)
        elif policy == "specific":
            chosen = sorted(entry.model_version_policy.specific.versions)
            missing = [v for v in chosen if v not in found]
            if missing:
                raise ValueError(f"{config_file}: model {entry.name} asks for versions {missing}, which "
                                 f"{entry.base_path} lacks (it has {sorted(found)}).")
        else:
            chosen = sorted(found)[-max(entry.model_version_policy.latest.num_versions, 1):]
        labels = dict(entry.version_labels)
        unknown = {label: v for label, v in labels.items() if v not in chosen}
        if unknown:
            raise ValueError(f"{config_file}: model {entry.name}'s labels {unknown} name versions it does not serve "
                             f"({chosen}).")
        specs.append(ModelSpec(entry.name, {v: found[v] for v in chosen}, labels))
    return specs


def serve(specs, host="127.0.0.1", port=8501, max_batch_size=32, batch_timeout_micros=0, limits=Limits(),
          grace_period=30, access_log=False, max_body_bytes=4 << 20, read_timeout=30.0, idle_timeout=65, sock=None,
          dtype="auto", calibration=None, max_batch_tokens=16384, in_flight=None, runtime="auto", pack_tokens=64):
    """Serves `specs` (`model_specs`) until SIGTERM or Ctrl-C, then finishes the requests in
    flight (up to `grace_period` seconds). The port is taken first (0: any free port; the log
    line that says where the server listens names it), or `sock` is the one
    `connections.listening_socket` took; then every version of every model is loaded and its
    first call traced, and only then does the port accept connections.

    Routes: TF Serving's `POST /v1/models/NAME[/versions/N | /labels/L]:predict` and
    `GET /v1/models/NAME[/versions/N]` (its status); KServe's `/v2/models/NAME[/versions/N]/infer`,
    `/v2/health/live`, `/v2/health/ready`, `/v2/models/NAME/ready`; Prometheus' `/metrics`. No
    route loads or unloads a model: what is served is what the command named.
    A bad request gets a 400 and one log line, not a traceback; a body over `max_body_bytes` a
    413 before it is read; a client gets `read_timeout` seconds to send a request and a
    connection `idle_timeout` seconds between requests (longer than a load balancer's usual 60,
    so that the balancer closes first). `access_log` logs every request (uvicorn's access log),
    which costs throughput under load.

    A SavedModel runs its `serving_default` in what it was exported with (`dtype` "auto", or the
    same). A run folder runs as its `predict` runs texts (`ServedKerasModel`): `dtype` "auto"
    (bfloat16 where it pays), "float32", "bfloat16" or "int8" (calibrated on `calibration`, a list
    of texts, where given), on `runtime` "auto" (OpenVINO where it is installed), "openvino" or
    "tensorflow", each batch packed in rows of `pack_tokens` tokens where it runs on OpenVINO
    (None: padded). Batches close at `max_batch_size` texts or `max_batch_tokens` tokens,
    and `in_flight` of them run at once (`Batcher`; None: one on OpenVINO, each on every core,
    two on TensorFlow).

    Example:
        ```python
        from keras_bert_lib.serve.server import model_specs, serve
        # serve(model_specs(["exported/saved_model"]), port=8501)
        ```
    """
    sock = sock or listening_socket(host, port)  # before loading the models, not a minute later
    argv, sys.argv = sys.argv, sys.argv[:1]  # KServe reads the command line when imported: ours is not its
    try:
        from kserve.model_server import ModelServer, app
        from prometheus_client import Histogram

        from keras_bert_lib.serve.client_apis import add_client_routes
        from keras_bert_lib.serve.routes import QuietRESTServer, add_routes
        from keras_bert_lib.serve.served_keras_model import ServedKerasModel
        from keras_bert_lib.serve.served_model import ServedModel
    finally:
        sys.argv = argv

    batch_rows = Histogram("keras_bert_batch_rows", "Rows (texts) per model call", ["model_name"],
                           buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    server = ModelServer(http_port=port, enable_grpc=False, grace_period=grace_period, workers=1)
    for name in ("kserve", "kserve.trace", "uvicorn.error"):  # per-request timings and start-up chatter
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").setLevel(logging.INFO if access_log else logging.WARNING)
    for spec in specs:
        for version, path in sorted(spec.versions.items()):
            name = spec.name if version == spec.default else f"{spec.name}@{version}"
            batching = dict(max_batch_size=max_batch_size, batch_timeout_micros=batch_timeout_micros, limits=limits,
                            on_batch=batch_rows.labels(model_name=spec.name).observe,
                            max_batch_tokens=max_batch_tokens, in_flight=in_flight)
            if is_saved_model(path):
                check_saved_model_dtype(path, dtype, runtime)
                model = ServedModel(name, path, **batching)
            else:  # a run folder or .keras file: on the path its predict takes
                model = ServedKerasModel(name, path, dtype, calibration, runtime=runtime, pack_tokens=pack_tokens,
                                         **batching)
            model.load()
            logger.info("Loaded %s version %d from %s: %s.", spec.name, version, path, model.precision)
            server.register_model(model, name)
            if version == spec.default:
                server.register_model(model, f"{spec.name}@{version}")
    add_routes(app, server.dataplane, specs)
    add_client_routes(app, server.dataplane, specs)  # OpenAI's /v1/embeddings and /v1/models, TEI's /embed, /rerank
    served = [spec.name + (f" (versions {', '.join(map(str, sorted(spec.versions)))})" if len(spec.versions) > 1
                           else "") for spec in specs]
    rest = QuietRESTServer("kserve.model_server:app", server.dataplane, server.model_repository_extension, port,
                           grace_period=grace_period, timeout_keep_alive=idle_timeout, served=served,
                           middleware=[(BodyLimits, {"max_body_bytes": max_body_bytes, "read_timeout": read_timeout})])
    rest.config.http = functools.partial(RequestDeadline, read_timeout=read_timeout)

    async def run():
        server.setup_event_loop()
        await rest.start(sockets=[sock])

    # KServe answers with FastAPI's ORJSONResponse, which FastAPI now calls deprecated, once per route.
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")

    bound = sock.getsockname()
    logger.info("Serving %s on http://%s:%d", ", ".join(spec.name for spec in specs),
                f"[{bound[0]}]" if ":" in bound[0] else bound[0], bound[1])
    # uvicorn drains on SIGTERM, then raises it again to the handler it found: this one exits
    # through Python (atexit runs) where the default would kill the process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        import uvloop  # libuv's event loop: a request costs less of the loop's time than on asyncio's
    except ImportError:  # Windows
        uvloop = None
    try:
        uvloop.run(run()) if uvloop is not None else asyncio.run(run())
    finally:
        logger.info("Stopped; the requests in flight were answered.")




def is_saved_model(path):
    """Whether `path` is a SavedModel folder (else a run folder or a `.keras` file)."""
    return os.path.isfile(os.path.join(path, "saved_model.pb"))


def check_saved_model_dtype(path, dtype, runtime="auto"):
    """Raises a ValueError where `--dtype` asks a SavedModel for what it was not exported in, or
    `--runtime` for another runtime than TensorFlow's."""
    from keras_bert_lib.export.saved_model import saved_model_dtype

    if runtime == "openvino":
        raise ValueError(f"{path} is a SavedModel, which runs on TensorFlow: serve the fine-tuning run's folder to run "
                         "on OpenVINO, or leave --runtime at auto.")
    weights = saved_model_dtype(path)
    if dtype not in ("auto", weights):
        fix = ("serve the fine-tuning run's folder, which runs in any --dtype" if dtype == "int8"
               else f"export it with --dtype {dtype}, or serve the run's folder")
        raise ValueError(f"{path} is a SavedModel of {weights} weights, which computes in what it was exported with: "
                         f"{fix}, or leave --dtype at auto.")
