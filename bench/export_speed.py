"""bert_base served every way we export it: Keras, SavedModel, TFLite and ONNX Runtime, one run.

    python bench/export_speed.py [--rounds 7] [--length 128] [--layers 12] [--pause 0.2] [--output DIR]

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
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import keras_bert_lib as kb  # noqa: E402
from bench.encoder_speed import batch_of  # noqa: E402
from bench.interleaved import interleaved_medians  # noqa: E402
from keras_bert_lib.export import export_saved_model  # noqa: E402
from keras_bert_lib.export.isolated import export_isolated  # noqa: E402
from keras_bert_lib.export.parity import runner  # noqa: E402


def cpu_tag():
    """"epyc_avx512" or "epyc_avx2" …: the results file of each kind of machine kept apart."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    vendor = cpu_model().split()[1].lower() if len(cpu_model().split()) > 1 else "cpu"
    return f"{vendor}_{'amx' if 'amx_bf16' in flags else 'avx512' if 'avx512_vnni' in flags else 'avx2'}"


def cpu_model():
    """lscpu's model name with its family and model numbers and its widest vector and bfloat16
    instructions: "AMD EPYC" alone names Zen 3 (AVX2) and Zen 4 (AVX512-BF16) alike."""
    from keras_bert_lib.compile_path import bfloat16_kernels, cpu_flags

    lines = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    field = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    flags = cpu_flags()
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    kernels = bfloat16_kernels(flags)
    return (f"{field.get('Model name', platform.processor())} (family {field.get('CPU family', '?')}, "
            f"model {field.get('Model', '?')}; {vectors}, {'bfloat16: ' + kernels if kernels else 'no bfloat16'})")


def cosine(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.min(np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)))


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
        results["batches"][size]["ratios"] = ratios
        print("speed-ups: " + "; ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"export_speed_{cpu_tag()}.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
