"""A bounded load generator for an HTTP endpoint: a fixed count of requests from a few
concurrent clients, within a time limit; requests/s, texts/s and latency percentiles."""

import http.client
import itertools
import json
import threading
import time
import urllib.parse

import numpy as np


def run_load(url, bodies, concurrency=16, requests=400, time_limit=120.0, texts_per_request=1):
    """Posts `requests` JSON bodies (cycling through `bodies`) to `url` from `concurrency` clients
    at once, each on its own keep-alive connection, and stops early at `time_limit` seconds.

    Returns {"requests", "errors" (non-2xx or failed), "error_examples", "seconds",
    "requests_per_second", "texts_per_second", "p50_ms", "p95_ms", "p99_ms", "statuses",
    "client_cpu_ms_per_request"}: the last is this process's CPU time over the requests sent, what
    the clients take from a server on the same machine.

    Example:
        ```python
        from keras_bert_lib.serve.loadgen import run_load
        # run_load("http://127.0.0.1:8501/v1/models/classifier:predict", [{"instances": ["a text"]}])
        ```
    """
    target = urllib.parse.urlsplit(url)
    payloads = [json.dumps(b).encode("utf-8") for b in bodies]
    numbers = itertools.count()
    latencies, statuses, examples = [], {}, []
    lock = threading.Lock()
    deadline = time.perf_counter() + time_limit

    def client():
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=time_limit)
        while time.perf_counter() < deadline:
            number = next(numbers)
            if number >= requests:
                break
            start = time.perf_counter()
            try:
                connection.request("POST", target.path, payloads[number % len(payloads)],
                                   {"Content-Type": "application/json"})
                response = connection.getresponse()
                text = response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as e:
                connection.close()
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=time_limit)
                status, text = type(e).__name__, str(e).encode()
            with lock:
                latencies.append(time.perf_counter() - start)
                statuses[status] = statuses.get(status, 0) + 1
                if status != 200 and len(examples) < 3:
                    examples.append(text[:300].decode("utf-8", "replace"))
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    start, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    done = len(latencies)
    p50, p95, p99 = (np.percentile(latencies, [50, 95, 99]) * 1000).tolist() if done else [float("nan")] * 3
    return {"requests": done, "errors": done - statuses.get(200, 0), "error_examples": examples,
            "seconds": seconds, "requests_per_second": done / seconds,
            "texts_per_second": statuses.get(200, 0) * texts_per_request / seconds,
            "p50_ms": p50, "p95_ms": p95, "p99_ms": p99, "statuses": statuses,
            "client_cpu_ms_per_request": cpu * 1000 / done if done else float("nan")}
