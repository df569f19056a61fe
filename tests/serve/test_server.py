"""`keras-bert serve` on loopback: export/serving/predict.json answered as the Keras model answers,
for every task model; versions, labels and models.config; health and metrics; TF Serving's
error shape for every bad request; a client that disconnects; SIGTERM drains what is in flight;
batching under concurrent clients (the suite's small load test; bench/serve_load.py is the
full one)."""

import json
import os
import resource
import signal
import socket
import threading
import time

import numpy as np
import pytest

from keras_bert_lib import SentenceEmbedder
from keras_bert_lib.export import export_saved_model
from keras_bert_lib.export.signatures import task_outputs
from keras_bert_lib.serve.loadgen import run_load
from tests.export.test_saved_model import _models
from tests.serve.server_process import call, running_server
from tests.tasks.test_task_models import _preprocessor, _tiny

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREDICT_JSON = json.load(open(os.path.join(ROOT, "export", "serving", "predict.json"), encoding="utf-8"))
TEXTS = PREDICT_JSON["inputs"]["text"]
PAIRS = ["good acting", "film", "a bot ."]


def _task_models():
    models = {name: value for name, value in _models().items() if name != "encoder"}
    models["embedder"] = (SentenceEmbedder(_tiny(), preprocessor=_preprocessor()), False)
    return models


def _expected(model, pair):
    ids = {k: v.numpy() for k, v in model.preprocessor((TEXTS, PAIRS) if pair else TEXTS).items()}
    return {k: np.asarray(v) for k, v in task_outputs(model, ids).items()}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Every task model, and a classifier in two versions behind a models.config, on one server."""
    folder = tmp_path_factory.mktemp("serve")
    expected, arguments = {}, []
    for name, (model, pair) in _task_models().items():
        export_saved_model(model, folder / name, pair=pair)
        expected[name] = _expected(model, pair)
        arguments.append(f"{name}={folder / name}")
    second = TextClassifierVersion2()
    export_saved_model(second, folder / "classifier", version=2)
    expected["classifier@2"] = _expected(second, False)
    (folder / "run").mkdir()
    second.save(folder / "run" / "model.keras")  # a run folder: served on its Keras model
    arguments.append(str(folder / "run"))
    config = folder / "models.config"
    config.write_text('model_config_list { config { name: "versioned" base_path: "%s" model_platform: "tensorflow" '
                      'model_version_policy { all {} } version_labels { key: "stable" value: 1 } '
                      'version_labels { key: "canary" value: 2 } } }' % (folder / "classifier"))
    (folder / "log").mkdir()
    with running_server([*arguments[1:], "--model-config-file", str(config), "--max-batch-size", "16",
                         "--read-timeout", "3"], str(folder / "log")) as (url, process):
        yield url, expected, folder


def _log(folder):
    """The log of the `served` fixture's server."""
    (path,) = (folder / "log").iterdir()
    return path.read_text(encoding="utf-8")


def TextClassifierVersion2():
    from keras_bert_lib import TextClassifier

    return TextClassifier(_tiny(), 3, preprocessor=_preprocessor(), class_names=["a", "b", "c"])


def _check(got, want, name):
    for key, value in want.items():
        np.testing.assert_allclose(np.asarray(got[key]), value, atol=1e-5, rtol=0, err_msg=f"{name} {key}")


def test_predict_json_is_answered_as_the_keras_model_answers_for_every_task_model(served):
    url, expected, _ = served
    for name, (_, pair) in _task_models().items():
        model = "versioned" if name == "classifier" else name  # the classifier's folder is behind models.config
        body = json.loads(json.dumps(PREDICT_JSON))
        if pair:
            body["inputs"]["text_pair"] = PAIRS
        status, answer = call(url, "POST", f"/v1/models/{model}{'/versions/1' if model == 'versioned' else ''}"
                                           ":predict", body)
        assert status == 200, (name, answer)
        want = expected[name]
        outputs = answer["outputs"] if len(want) > 1 else {next(iter(want)): answer["outputs"]}
        _check(outputs, want, name)
        # The row format: one object of outputs per text (or the value itself for one output).
        rows = [{"text": t, "text_pair": p} for t, p in zip(TEXTS, PAIRS)] if pair else TEXTS
        status, answer = call(url, "POST", f"/v1/models/{model}:predict" if model != "versioned"
                              else "/v1/models/versioned/labels/stable:predict", {"instances": rows})
        assert status == 200, (name, answer)
        predictions = answer["predictions"]
        columns = {k: [p[k] for p in predictions] for k in want} if len(want) > 1 else \
            {next(iter(want)): predictions}
        _check(columns, want, name)


def test_a_run_folder_is_served_on_its_keras_model_under_its_folders_name(served):
    url, expected, _ = served
    status, answer = call(url, "POST", "/v1/models/run:predict", {"inputs": {"text": TEXTS}})
    assert status == 200, answer
    _check(answer["outputs"], expected["classifier@2"], "run folder")
    # the classifier's class names travel with it: the label's name beside its index
    assert answer["outputs"]["class_name"] == [["a", "b", "c"][i] for i in answer["outputs"]["label"]]


def test_the_open_inference_protocol_answers_the_same(served):
    url, expected, _ = served
    body = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [3], "data": TEXTS},
                       {"name": "text_pair", "datatype": "BYTES", "shape": [3], "data": PAIRS}]}
    status, answer = call(url, "POST", "/v2/models/cross_encoder/infer", body)
    assert status == 200, answer
    score = next(o for o in answer["outputs"] if o["name"] == "score")
    assert score["shape"] == [3] and score["datatype"] == "FP32"
    np.testing.assert_allclose(score["data"], expected["cross_encoder"]["score"], atol=1e-5)
    status, answer = call(url, "POST", "/v2/models/versioned/versions/2/infer", {"inputs": [body["inputs"][0]]})
    assert status == 200, answer
    probabilities = next(o for o in answer["outputs"] if o["name"] == "probabilities")
    np.testing.assert_allclose(np.reshape(probabilities["data"], probabilities["shape"]),
                               expected["classifier@2"]["probabilities"], atol=1e-5)


def test_versions_labels_and_tf_servings_model_status(served):
    url, expected, _ = served
    status, answer = call(url, "GET", "/v1/models/versioned")
    assert status == 200 and answer["ready"] is True
    assert [(s["version"], s["state"]) for s in answer["model_version_status"]] == [("1", "AVAILABLE"),
                                                                                     ("2", "AVAILABLE")]
    for path, want in [("/v1/models/versioned:predict", "classifier@2"),  # no version: the highest
                       ("/v1/models/versioned/labels/canary:predict", "classifier@2"),
                       ("/v1/models/versioned/versions/1:predict", "classifier")]:
        status, answer = call(url, "POST", path, {"inputs": {"text": TEXTS}})
        assert status == 200, (path, answer)
        _check(answer["outputs"], expected[want], path)
    status, answer = call(url, "POST", "/v1/models/versioned/versions/7:predict", {"instances": ["a"]})
    assert status == 404 and "version 7; it serves [1, 2]" in answer["error"]
    status, answer = call(url, "POST", "/v1/models/nothing:predict", {"instances": ["a"]})
    assert status == 404 and "nothing" in answer["error"]


def test_health_readiness_and_prometheus_metrics(served):
    url, _, folder = served
    assert call(url, "GET", "/v2/health/live")[0] == 200
    assert call(url, "GET", "/v2/health/ready") == (200, {"ready": True})
    assert "Loaded embedder version 1 from" in _log(folder) and "float32 weights, TensorFlow on the CPU" in _log(folder)
    assert call(url, "GET", "/v2/models/embedder/ready")[0] == 200
    call(url, "POST", "/v1/models/embedder:predict", {"instances": ["good film"]})
    status, metrics = call(url, "GET", "/metrics")
    assert status == 200
    assert 'keras_bert_batch_rows_count{model_name="embedder"}' in metrics
    assert 'request_predict_seconds_count{model_name="embedder"}' in metrics


@pytest.mark.parametrize("body, words", [
    (b"{not json", "Unrecognized request format"),
    ({"instances": [{"sentence": "good film"}]}, "Unknown: sentence. Missing: text"),
    ({"instances": [42]}, "instance 0.text is a JSON number, not a string"),
    ({"instances": []}, "holds no texts"),
    ({"instances": ["good film"] * 10_000}, "10,000 texts; this server takes at most 1,024"),
    ({"instances": ["x" * 1_000_000]}, "has 1,000,000 bytes; this server takes at most 65,536"),
])
def test_every_bad_request_gets_a_400_that_names_it_and_the_server_keeps_serving(served, body, words):
    url, expected, _ = served
    status, answer = call(url, "POST", "/v1/models/embedder:predict", body)
    assert status == 400 and words in answer["error"], (status, answer)
    status, answer = call(url, "POST", "/v1/models/embedder:predict", {"instances": TEXTS})
    assert status == 200
    _check({"embeddings": answer["predictions"]}, expected["embedder"], "after a bad request")


def test_no_request_unloads_a_model_and_readiness_stays_true_while_every_model_serves(served):
    url, expected, _ = served
    for action in ("unload", "load"):
        status, answer = call(url, "POST", f"/v2/repository/models/embedder/{action}")
        assert status == 404 and "does not load or unload models" in answer["error"], answer
    assert call(url, "GET", "/v2/health/ready") == (200, {"ready": True})
    status, answer = call(url, "POST", "/v1/models/embedder:predict", {"instances": TEXTS})
    assert status == 200
    _check({"embeddings": answer["predictions"]}, expected["embedder"], "after an unload request")


def test_an_unknown_model_is_a_404_naming_what_is_served_and_one_info_line(served):
    url, _, folder = served
    for _ in range(3):
        status, answer = call(url, "POST", "/v1/models/absent:predict", {"instances": ["a"]})
        assert status == 404 and "This server serves" in answer["error"] and "versioned (versions 1, 2)" in \
            answer["error"], answer
    deadline = time.monotonic() + 10  # the server's log is another process's file: give its writes a moment
    while len(lines := [line for line in _log(folder).splitlines() if "absent" in line]) < 3 and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(lines) == 3 and all(" INFO 404 POST /v1/models/absent:predict: " in line for line in lines), lines
    assert "Traceback" not in _log(folder)


def test_another_method_on_a_predict_route_is_405(served):
    url, _, _ = served
    for method, path in [("GET", "/v1/models/embedder:predict"), ("PUT", "/v1/models/versioned/versions/1:predict"),
                         ("GET", "/v2/models/embedder/infer")]:
        status, answer = call(url, method, path)
        assert status == 405 and "takes POST" in answer["error"], (method, path, answer)


def test_deeply_nested_json_sent_as_text_is_a_400(served):
    url, _, _ = served
    status, answer = call(url, "POST", "/v1/models/embedder:predict", b"[" * 100_000, content_type="text/plain")
    assert status == 400 and "nested too deeply" in answer["error"], answer


def test_a_bad_open_inference_body_gets_a_400_in_tf_servings_error_shape(served):
    url, _, _ = served
    status, answer = call(url, "POST", "/v2/models/embedder/infer", {"inputs": [{"name": "text"}]})
    assert status == 400 and "not an inference request" in answer["error"]
    status, answer = call(url, "POST", "/v2/models/embedder/infer",
                          {"inputs": [{"name": "text", "datatype": "INT32", "shape": [1], "data": [1]}]})
    assert status == 400 and "datatype BYTES" in answer["error"]


def test_a_client_that_disconnects_mid_request_leaves_the_server_serving(served):
    url, expected, folder = served
    port = int(url.rsplit(":", 1)[1])
    body = json.dumps({"instances": ["good film"] * 1000}).encode()
    for cut in (len(body) // 2, len(body)):  # mid-body, and after the body before the answer
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"POST /v1/models/embedder:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body[:cut])
    time.sleep(1)
    status, answer = call(url, "POST", "/v1/models/embedder:predict", {"instances": TEXTS})
    assert status == 200
    _check({"embeddings": answer["predictions"]}, expected["embedder"], "after a disconnect")
    assert f"the client left after {len(body) // 2:,} bytes of its body." in _log(folder)


def test_batching_serves_concurrent_clients_faster_and_sigterm_drains_the_requests_in_flight(served):
    """16 clients sending one text each: batched (16) against unbatched (1), the same requests,
    alternating three rounds (the machine is shared: medians of rounds run side by side)."""
    url, _, folder = served
    bodies = [{"instances": [t]} for t in TEXTS + PAIRS]
    with running_server([f"embedder={folder / 'embedder'}", "--max-batch-size", "1"], str(folder)) as (alone, process):
        rounds = {"batched": [], "unbatched": []}
        # One unmeasured round each first: a server's first calls at each batch shape cost several times a
        # warm call (the batched server's p99 was 427 then 261 ms in its first two rounds of 160, 74 ms
        # after), which decided the comparison by which server had seen more shapes before.
        for server in (url, alone):
            assert run_load(f"{server}/v1/models/embedder:predict", bodies, concurrency=16, requests=320,
                            time_limit=120)["errors"] == 0
        before = {name: _batch_rows(server) for name, server in (("batched", url), ("unbatched", alone))}
        for _ in range(3):
            for name, server in (("batched", url), ("unbatched", alone)):
                used = resource.getrusage(resource.RUSAGE_SELF)
                result = run_load(f"{server}/v1/models/embedder:predict", bodies, concurrency=16, requests=160,
                                  time_limit=120)
                after = resource.getrusage(resource.RUSAGE_SELF)
                assert result["requests"] == 160 and result["errors"] == 0, result
                # the clients' CPU a request, as the kernel counts this process's: getrusage's window is a
                # little wider and its total can lag the precise clock by a scheduler tick or two (measured:
                # 0.436 against 0.486 ms beside the rest of the suite); the wall time a request (~4 ms) or one
                # thread's CPU (~0) would be far outside a quarter
                cpu = (after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime) * 1000 / 160
                assert result["client_cpu_ms_per_request"] == pytest.approx(cpu, rel=0.25, abs=0.05), (result, cpu)
                rounds[name].append(result)
        # Rows a model call, from each server's Prometheus metrics over these rounds: batching batched.
        per_call = {name: np.divide(*(_batch_rows(server) - before[name]))
                    for name, server in (("batched", url), ("unbatched", alone))}
        assert per_call["unbatched"] == 1 and per_call["batched"] > 1.5, per_call
        # SIGTERM while a large request runs: it is answered, then the server exits.
        answers = []
        slow = threading.Thread(target=lambda: answers.append(call(alone, "POST", "/v1/models/embedder:predict",
                                                                   {"instances": ["good film ."] * 1000})))
        slow.start()
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        slow.join(120)
        assert answers and answers[0][0] == 200 and len(answers[0][1]["predictions"]) == 1000
        assert process.wait(60) is not None
    # Started again at once on the port it left (bound with SO_REUSEADDR), then Ctrl-C: a clean stop.
    port = int(alone.rsplit(":", 1)[1])
    with running_server([f"embedder={folder / 'embedder'}"], str(folder), port=port) as (again, process):
        assert again == alone and call(again, "POST", "/v1/models/embedder:predict", {"instances": TEXTS})[0] == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(60) in (0, 130)
        log = open(process.log_path, encoding="utf-8").read()
        assert "Traceback" not in log and "Stopped; the requests in flight were answered." in log, log[-3000:]
    median = {name: sorted(results, key=lambda r: r["requests_per_second"])[1] for name, results in rounds.items()}
    ratio = median["batched"]["requests_per_second"] / median["unbatched"]["requests_per_second"]
    print(f"batched {median['batched']['requests_per_second']:.0f} req/s (p99 {median['batched']['p99_ms']:.0f} ms, "
          f"{per_call['batched']:.1f} rows a call), "
          f"unbatched {median['unbatched']['requests_per_second']:.0f} req/s (p99 "
          f"{median['unbatched']['p99_ms']:.0f} ms): {ratio:.2f}x")
    # How much batching gains on a tiny model depends on the CPU's per-call cost (from 1.05x to 1.64x in
    # requests a second on the project's machines, beside the rest of the suite). It wins in requests a
    # second (by a tenth) or, where they come out near level, in the tail: 16 clients queue behind one
    # call at a time without it. A round's p99 is its second-slowest answer of 160: too noisy alone to
    # decide a round that batching won by a third. bench/serve_load.py measures all-MiniLM-L6-v2 on a
    # quiet machine.
    faster, shorter_tail = ratio > 1.1, median["batched"]["p99_ms"] < median["unbatched"]["p99_ms"]
    assert ratio > 0.95 and (faster or shorter_tail), rounds


def _batch_rows(url):
    """[rows, model calls] the embedder has run so far: its `keras_bert_batch_rows` histogram's sum
    and count, read by prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    samples = {sample.name: sample.value for family in text_string_to_metric_families(call(url, "GET", "/metrics")[1])
               for sample in family.samples if sample.labels.get("model_name") == "embedder"}
    return np.array([samples["keras_bert_batch_rows_sum"], samples["keras_bert_batch_rows_count"]])


SERVER_ROWS = [  # (what, method, path, body: a dict sent as JSON, bytes, or ("raw", bytes) for the socket)
    ("a body that is not JSON", "POST", "/v1/models/embedder:predict", b"{not json"),
    ("JSON nested too deeply, as text/plain", "POST", "/v1/models/embedder:predict", ("text/plain", b"[" * 100_000)),
    ("an input the model does not take", "POST", "/v1/models/embedder:predict",
     {"instances": [{"sentence": "good film"}]}),
    ("a number for a text", "POST", "/v1/models/embedder:predict", {"instances": [42]}),
    ("no texts", "POST", "/v1/models/embedder:predict", {"instances": []}),
    ("10,000 texts in one request", "POST", "/v1/models/embedder:predict", {"instances": ["good film"] * 10_000}),
    ("a text of 1 MB", "POST", "/v1/models/embedder:predict", {"instances": ["x" * 1_000_000]}),
    ("a V2 body that is not an inference request", "POST", "/v2/models/embedder/infer", {"inputs": [{"name": "text"}]}),
    ("an unknown model", "POST", "/v1/models/absent:predict", {"instances": ["a"]}),
    ("an unknown version", "POST", "/v1/models/versioned/versions/7:predict", {"instances": ["a"]}),
    ("GET on a route that predicts", "GET", "/v1/models/embedder:predict", None),
    ("a request to unload a model", "POST", "/v2/repository/models/embedder/unload", None),
    ("a body of 300 MB (its Content-Length)", "POST", "/v1/models/embedder:predict", ("raw", 300_000_000)),
    ("a body that stops coming (--read-timeout 3 here)", "POST", "/v1/models/embedder:predict", ("raw", 100)),
]


def _raw(url, path, length, sent):
    """(status, error) of a request whose body is `length` bytes by its header, `sent` of them sent."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (path.encode(), length) + b"x" * sent)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_every_row_of_the_servers_bad_input_table_is_refused_in_one_log_line(served):
    from tests.bad_inputs import check_page

    url, expected, folder = served
    rows, before = [], len(_log(folder).splitlines())
    for what, method, path, body in SERVER_ROWS:
        if isinstance(body, tuple) and body[0] == "raw":
            status, answer = _raw(url, path, body[1], sent=10 if body[1] == 100 else 0)
        elif isinstance(body, tuple):
            status, answer = call(url, method, path, body[1], content_type=body[0])
        else:
            status, answer = call(url, method, path, body)
        assert 400 <= status < 500 and "\n" not in answer["error"], (what, status, answer)
        if isinstance(body, tuple):
            shown = f"Content-Length: {body[1]:,}" if body[0] == "raw" else f"{body[1][:12].decode()}... as {body[0]}"
        else:
            shown = "" if body is None else body.decode() if isinstance(body, bytes) else json.dumps(body)
        shown = shown if len(shown) <= 48 else shown[:44] + " ..."
        rows.append((what, f"{method} {path} {shown}".strip(), f"{status} {answer['error']}"))
    log = _log(folder).splitlines()[before:]
    assert len(log) == len(SERVER_ROWS) and all(" INFO " in line for line in log), log
    status, answer = call(url, "POST", "/v1/models/embedder:predict", {"instances": TEXTS})
    assert status == 200  # and it serves on
    _check({"embeddings": answer["predictions"]}, expected["embedder"], "after every bad request")
    check_page("server", rows, "tests/serve/test_server.py")
