"""BERT and ModernBERT on a GPU: our encoder on Keras' JAX backend against HuggingFace transformers
(eager and `torch.compile`), forward pass and training step, in one run. Needs no TensorFlow (the GPU
machine has none): carry the keras, namex and optree wheels and run

    KERAS_BACKEND=jax python -m bench.gpu_speed [--presets bert_base bert_large modernbert_base]
        [--shapes 64x128 32x512] [--dtypes float32 mixed_bfloat16 bfloat16] [--steps 20]

keras-hub's BertBackbone of the same shape runs beside BERT where keras-hub imports
(`--no-keras-hub` skips it; keras-hub has no ModernBERT); `--largest` also times the largest
batch that fits, found by doubling. Random weights and ids, no padding, a sequence-classification
head on the pooled output (ModernBERT's: on [CLS]),
AdamW. Each row is the median milliseconds of `--steps` calls after warm-up (compilation
excluded), tokens per second, and the model FLOPs utilisation

    MFU = FLOPs per step / seconds per step / peak,
    FLOPs per step = tokens x (2N + 4·L·T·d) for the forward pass and 3x that for training
                     (N: parameters outside the embeddings, L layers, T tokens a row, d width;
                     ModernBERT's local layers attend to 128 keys, not T, there),

with peak the GPU's dense bf16 rate (989 TFLOP/s on an H100 SXM; `--peak-tflops`; float32 runs as
TF32 on both sides). dtypes: `float32`; `mixed_bfloat16` (float32 weights, bf16 compute:
Keras' policy, torch's autocast); `bfloat16` (bf16 weights, forward only: our `with_dtype`
serving copy's dtype, torch's `model.to(torch.bfloat16)`). Ours runs the jitted step Keras' `fit`
runs (`train_on_batch` on device arrays) and, for the forward pass, `predict_on_batch` and a
jitted `stateless_call` that keeps its outputs on the device
(`keras_bert_lib.runtime.compile_path.compiled_call`: no numpy round-trip).
The attention is `keras.ops.dot_product_attention` (cuDNN flash attention where JAX can use it)
when no attention dropout is on, as here. On a CPU (`--presets bert_tiny --shapes 2x16`) it
checks that the script runs; its numbers mean nothing there.
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np

SHAPES = {"bert_tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
          "bert_base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
          "bert_large": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096),
          # GeGLU (an H → 2I product), global attention every third layer, a 128-token window elsewhere
          "modernbert_base": dict(num_hidden_layers=22, hidden_size=768, num_attention_heads=12,
                                  intermediate_size=1152)}
VOCAB = {"modernbert_base": 50368}  # the others: BERT's 30,522 (bert_tiny: 1,000)


def vocab(preset):
    return VOCAB.get(preset, 1000 if preset == "bert_tiny" else 30522)


def flops(preset, batch, length, training):
    """Model FLOPs of one step (the formula in the docstring)."""
    s = SHAPES[preset]
    layers, width, inner = s["num_hidden_layers"], s["hidden_size"], s["intermediate_size"]
    modern = preset.startswith("modernbert")
    n = layers * (4 * width * width + (3 if modern else 2) * width * inner)
    global_layers = (layers + 2) // 3 if modern else layers  # ModernBERT: layers 0, 3, 6, … attend to all T
    keys = global_layers * length + (layers - global_layers) * min(length, 128)
    forward = batch * length * (2 * n + 4 * keys * width)
    return 3 * forward if training else forward


def _median_ms(run, steps, sync):
    run()
    run()  # compiled and warm
    sync()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def ours(preset, batch, length, dtype, steps):
    import jax
    import keras

    from keras_bert_lib import bert_base, bert_large, bert_tiny, modernbert_base
    from keras_bert_lib.runtime.compile_path import compiled_call
    from keras_bert_lib.tasks import TextClassifier

    keras.config.set_dtype_policy("mixed_bfloat16" if dtype == "mixed_bfloat16" else
                                  "bfloat16" if dtype == "bfloat16" else "float32")
    build = {"bert_tiny": bert_tiny, "bert_base": bert_base, "bert_large": bert_large,
             "modernbert_base": modernbert_base}[preset]
    rng = np.random.default_rng(0)
    x = {"token_ids": jax.device_put(rng.integers(5, vocab(preset), (batch, length)).astype("int32")),
         "segment_ids": jax.device_put(np.zeros((batch, length), "int32")),
         "padding_mask": jax.device_put(np.ones((batch, length), "int32"))}
    y = jax.device_put(rng.integers(0, 2, batch).astype("int32"))
    no_dropout = {"attention_dropout" if preset.startswith("modernbert") else "attention_probs_dropout_prob": 0.0}
    model = TextClassifier(build(**no_dropout), 2)
    results = {}
    if dtype != "bfloat16":  # training keeps float32 weights
        # BERT's AdamW (Keras' own: keras_bert_lib.training needs TensorFlow, absent on the GPU machine)
        optimizer = keras.optimizers.AdamW(1e-5, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                                           global_clipnorm=1.0)
        optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
        results["train (fit's step)"] = _median_ms(lambda: model.train_on_batch(x, y), steps, lambda: None)
    results["forward (predict_on_batch)"] = _median_ms(lambda: model.predict_on_batch(x), steps, lambda: None)
    forward = compiled_call(model)  # jax.jit of stateless_call: outputs stay on the device
    out = {}

    def call():
        out["y"] = forward(x)

    results["forward (jitted, on device)"] = _median_ms(call, steps, lambda: jax.block_until_ready(out["y"]))
    keras.config.set_dtype_policy("float32")
    return results


def keras_hub_side(preset, batch, length, dtype, steps):
    """keras-hub's BertBackbone (same shape, dropout 0.1 as BERT's, its own attention) with a
    Dense head on the [CLS] output, trained and called the way ours is."""
    import jax
    import keras
    import keras_hub

    s = SHAPES[preset]
    keras.config.set_dtype_policy("mixed_bfloat16" if dtype == "mixed_bfloat16" else
                                  "bfloat16" if dtype == "bfloat16" else "float32")
    if preset.startswith("modernbert"):
        raise ImportError("keras-hub has no ModernBERT")
    backbone = keras_hub.models.BertBackbone(vocab(preset), s["num_hidden_layers"], s["num_attention_heads"],
                                             s["hidden_size"], s["intermediate_size"])
    inputs = backbone.input
    logits = keras.layers.Dense(2, dtype="float32")(backbone(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    rng = np.random.default_rng(0)
    x = {"token_ids": jax.device_put(rng.integers(5, vocab(preset), (batch, length)).astype("int32")),
         "segment_ids": jax.device_put(np.zeros((batch, length), "int32")),
         "padding_mask": jax.device_put(np.ones((batch, length), "int32"))}
    y = jax.device_put(rng.integers(0, 2, batch).astype("int32"))
    results = {}
    if dtype != "bfloat16":
        model.compile(optimizer=keras.optimizers.AdamW(1e-5, weight_decay=0.01, global_clipnorm=1.0),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
        results["train (fit's step)"] = _median_ms(lambda: model.train_on_batch(x, y), steps, lambda: None)
    results["forward (predict_on_batch)"] = _median_ms(lambda: model.predict_on_batch(x), steps, lambda: None)
    keras.config.set_dtype_policy("float32")
    return results


def largest_batch(preset, length, dtype, start, cap):
    """The largest batch (doubling from `start`, up to `cap`) whose training step (forward for
    bfloat16 weights) runs on this device, for ours: the step that runs out of memory ends the search."""
    batch, largest = start, None
    while batch <= cap:
        try:
            ours(preset, batch, length, dtype, 1)
        except Exception as e:  # XLA's RESOURCE_EXHAUSTED, or the allocator's out of memory
            if "RESOURCE_EXHAUSTED" not in str(e) and "out of memory" not in str(e).lower():
                raise
            break
        largest, batch = batch, batch * 2
    return largest


def theirs(preset, batch, length, dtype, steps, compiled):
    import torch
    import transformers

    s = SHAPES[preset]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if preset.startswith("modernbert"):
        config = transformers.ModernBertConfig(vocab_size=vocab(preset), num_labels=2, classifier_pooling="cls",
                                               attn_implementation="sdpa", **s)
        model = transformers.ModernBertForSequenceClassification(config).to(device)
    else:
        config = transformers.BertConfig(vocab_size=vocab(preset), num_labels=2, hidden_dropout_prob=0.1,
                                         attention_probs_dropout_prob=0.0, attn_implementation="sdpa", **s)
        model = transformers.BertForSequenceClassification(config).to(device)
    if dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    rng = np.random.default_rng(0)
    ids = torch.tensor(rng.integers(5, config.vocab_size, (batch, length)),
                       device=device)
    labels = torch.tensor(rng.integers(0, 2, batch), device=device)
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=dtype == "mixed_bfloat16")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    run_model = torch.compile(model) if compiled else model
    results = {}
    if dtype != "bfloat16":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
        model.train()

        def step():
            with autocast:
                loss = run_model(input_ids=ids, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        results["train"] = _median_ms(step, steps, sync)
    model.eval()

    def forward():
        with torch.no_grad(), autocast:
            run_model(input_ids=ids)

    results["forward"] = _median_ms(forward, steps, sync)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=["bert_base", "bert_large", "modernbert_base"],
                        choices=list(SHAPES), help="encoders to time (default: bert_base bert_large modernbert_base)")
    parser.add_argument("--shapes", nargs="+", default=["64x128", "32x512"],
                        help="BATCHxLENGTH shapes (default: 64x128 32x512)")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "mixed_bfloat16", "bfloat16"],
                        choices=["float32", "mixed_bfloat16", "bfloat16"], help="precisions (default: all three)")
    parser.add_argument("--steps", type=int, default=20, help="timed calls per row, after warm-up (default: 20)")
    parser.add_argument("--peak-tflops", type=float, default=989.0,
                        help="the GPU's dense bf16 peak for MFU (default: 989, an H100 SXM)")
    parser.add_argument("--no-torch-compile", action="store_true", help="skip transformers + torch.compile")
    parser.add_argument("--largest", action="store_true",
                        help="also time the largest batch that fits, doubling each shape's batch (default: off)")
    parser.add_argument("--max-batch", type=int, default=4096, help="where --largest stops doubling (default: 4096)")
    parser.add_argument("--no-keras-hub", action="store_true", help="skip keras-hub's BertBackbone")
    parser.add_argument("--json", help="also write the rows to this file (default: none)")
    args = parser.parse_args()
    import jax

    print(f"device: {jax.devices()[0].device_kind} ({jax.devices()[0].platform}); peak {args.peak_tflops} TFLOP/s")
    rows = []
    for preset in args.presets:
        shapes = [tuple(map(int, shape.split("x"))) for shape in args.shapes]
        for dtype in args.dtypes:
            for batch, length in shapes + ([(largest_batch(preset, length, dtype, batch, args.max_batch), length)
                                             for batch, length in shapes] if args.largest else []):
                shape = f"{batch}x{length}"
                sides = {"ours (Keras-JAX)": ours(preset, batch, length, dtype, args.steps),
                         "transformers eager": theirs(preset, batch, length, dtype, args.steps, False)}
                if not args.no_torch_compile:
                    sides["transformers + torch.compile"] = theirs(preset, batch, length, dtype, args.steps, True)
                if not args.no_keras_hub:
                    try:
                        sides["keras-hub BertBackbone"] = keras_hub_side(preset, batch, length, dtype, args.steps)
                    except ImportError as e:
                        print(f"keras-hub skipped: {e}", flush=True)
                for side, results in sides.items():
                    for what, ms in results.items():
                        training = what.startswith("train")
                        seconds = ms / 1e3
                        rows.append({"preset": preset, "shape": shape, "dtype": dtype, "side": side, "what": what,
                                     "ms": round(ms, 2), "tokens_per_s": round(batch * length / seconds),
                                     "mfu": round(flops(preset, batch, length, training) / seconds
                                                  / (args.peak_tflops * 1e12), 3)})
                        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
