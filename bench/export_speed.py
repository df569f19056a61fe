"""bert_base served every way we export it: Keras, SavedModel, TFLite and ONNX Runtime, one run.

    python -m bench.export_speed [--rounds 7] [--length 128] [--layers 12] [--pause 0.2] [--output DIR]

Exports one bert_base encoder (random weights, random biases and LayerNorm parameters; speed does
not depend on the values) to a SavedModel, TFLite float32 and dynamic-range int8, and ONNX
(tf2onnx's graph, ONNX Runtime's fused graph, and the fused graph with int8 weights), each
conversion in its own process. Then times batch 1 (latency) and batch 8 (throughput) of every
variant in interleaved rounds (each round calls every variant once, in turn, so machine noise
hits all alike, with a pause before each call so that no runtime's spinning threads share the
cores with the next) and prints medians, ratios and each artefact's pooled-output cosine to Keras.
Goals (issue 13): fused ONNX Runtime ≥ 1.25× our Keras XLA path at batch 1; each int8 file
≥ 2.5× its float version. Writes bench/results/export_speed_<cpu>.json (epyc_avx2, epyc_avx512, …).
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

import keras_bert_lib as kb
from bench.common import batch_of, cosine, cpu_model, interleaved_medians, write_results
from keras_bert_lib.export import export_saved_model
from keras_bert_lib.export.isolated import export_isolated
from keras_bert_lib.export.parity import runner


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; medians are reported (default: 7)")
    parser.add_argument("--length", type=int, default=128, help="tokens per sequence (default: 128)")
    parser.add_argument("--layers", type=int, default=12, help="Transformer blocks of bert_base (default: 12)")
    parser.add_argument("--pause", type=float, default=0.2,
                        help="seconds of sleep before each timed call, so the previous runtime's spinning threads "
                             "park (default: 0.2)")
    parser.add_argument("--output", default=None, help="folder for the artefacts (default: a temporary folder)")
    args = parser.parse_args()

    encoder = kb.build_encoder(kb.PRESETS["bert_base"].replace(num_hidden_layers=args.layers))
    rng = np.random.default_rng(0)
    for variable in encoder.weights:
        if variable.path.rsplit("/", 1)[-1] in ("bias", "gamma", "beta"):
            variable.assign(variable.numpy() + rng.normal(0, 0.1, variable.shape).astype("float32"))
    folder = args.output or tempfile.mkdtemp(prefix="export_speed_")
    os.makedirs(folder, exist_ok=True)
    keras_file = os.path.join(folder, "bert_base.keras")
    encoder.save(keras_file)

    paths, conversion_s = {}, {}
    start = time.perf_counter()
    paths["SavedModel"] = export_saved_model(encoder, os.path.join(folder, "saved_model"))
    conversion_s["SavedModel"] = time.perf_counter() - start
    jobs = {"TFLite float32": ("tflite", "model.tflite", {}),
            "TFLite dynamic int8": ("tflite", "model_int8.tflite", {"quantization": "dynamic_int8"}),
            "ONNX Runtime, tf2onnx graph": ("onnx", "plain.onnx", {"optimize": False}),
            "ONNX Runtime, fused": ("onnx", "fused.onnx", {}),
            "ONNX Runtime, fused int8": ("onnx", "fused_int8.onnx", {"quantize": "dynamic_int8"})}
    for name, (fmt, file, options) in jobs.items():
        start = time.perf_counter()
        info = export_isolated(keras_file, fmt, os.path.join(folder, file), **options)
        conversion_s[name] = time.perf_counter() - start
        paths[name] = info["path"]
        print(f"{name}: {conversion_s[name]:.0f} s" + (f"; fused {info['fused']}" if info.get("fused") else ""),
              flush=True)

    variants = {"Keras eager": lambda ids: encoder(ids, training=False),
                "Keras predict_on_batch (XLA)": encoder.predict_on_batch}
    variants.update({name: runner(path) for name, path in paths.items()})
    results = {"cpu": cpu_model(), "cores": os.cpu_count(), "layers": args.layers, "length": args.length,
               "rounds": args.rounds, "pause_s": args.pause, "conversion_seconds": conversion_s, "batches": {}}
    rows_ratios = {}
    for size in (1, 8):
        batch = batch_of(size, args.length, encoder.config.vocab_size)
        want = np.asarray(encoder.predict_on_batch(batch)["pooled_output"])
        cosines = {name: cosine(fn(batch)["pooled_output"], want) for name, fn in variants.items()}
        for fn in variants.values():
            fn(batch)  # warm-up: XLA compilation, session and interpreter set-up
        medians = interleaved_medians({name: (lambda fn=fn: fn(batch)) for name, fn in variants.items()}, args.rounds,
                                      pause=args.pause)
        results["batches"][size] = {name: {"ms": medians[name] * 1e3, "sequences_per_s": size / medians[name],
                                           "pooled_cosine": cosines[name]} for name in variants}
        xla = medians["Keras predict_on_batch (XLA)"]
        print(f"\nbatch {size} x {args.length}, bert_base L={args.layers}, {results['cpu']}, {os.cpu_count()} cores")
        print(f"{'variant':34s}{'median ms':>10s}{'seq/s':>8s}{'vs XLA':>8s}{'cosine':>10s}")
        for name in variants:
            print(f"{name:34s}{medians[name] * 1e3:10.1f}{size / medians[name]:8.1f}{xla / medians[name]:7.2f}x"
                  f"{cosines[name]:10.5f}")
        ratios = {"fused ONNX Runtime / Keras XLA": xla / medians["ONNX Runtime, fused"],
                  "TFLite int8 / TFLite float32": medians["TFLite float32"] / medians["TFLite dynamic int8"],
                  "ONNX int8 / fused ONNX": medians["ONNX Runtime, fused"] / medians["ONNX Runtime, fused int8"],
                  "ONNX int8 / tf2onnx graph": medians["ONNX Runtime, tf2onnx graph"] / medians[
                      "ONNX Runtime, fused int8"]}
        rows_ratios[size] = ratios
        print("speed-ups: " + "; ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    rows = [{"batch": size, "variant": name, **values} for size, table in results.pop("batches").items()
            for name, values in table.items() if name != "ratios"]
    rows += [{"batch": size, "variant": name, "ratio": value} for size, table in rows_ratios.items()
             for name, value in table.items()]
    rows += [{"variant": f"conversion: {name}", "seconds": s} for name, s in results.pop("conversion_seconds").items()]
    write_results(__file__, rows, **{k: v for k, v in results.items() if k not in ("cpu", "cores")})


if __name__ == "__main__":
    main()
