"""Forward speed of bert_base against keras-hub's BertBackbone, in one interleaved run.

    python -m bench.encoder_speed [--rounds 7] [--length 128] [--layers 12]

Rows for float32 and mixed_bfloat16, each compiled with XLA and as a plain TensorFlow graph
(oneDNN kernels), ours and keras-hub's, our default path (`compile_path.choose_jit_compile`),
and both in bfloat16 variables (ours through `with_dtype`, the serving copy).

Both models compute the same function (tanh GELU, weights copied from keras-hub into ours).
Each round times every variant once, in turn, so machine noise hits all of them alike; the
table gives medians. The ceiling is the same run's float32 matmul throughput on this machine.
FLOP model (shared/reference.md): 2·P_mm·T + 4·L·T²·H per sequence, P_mm = L·(4H² + 2HI).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# keras (and tensorflow) come before keras_bert_lib below: turn oneDNN on as `import keras_bert_lib`
# would, before TensorFlow reads the setting (README, "In Python").
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras
import keras_hub
import numpy as np
import tensorflow as tf

import keras_bert_lib as kb
from bench.common import batch_of, interleaved_medians, write_results
from keras_bert_lib.models import encoder_from_keras_hub
from keras_bert_lib.runtime import with_dtype


def flops_per_sequence(config, length):
    L, H, I = config.num_hidden_layers, config.hidden_size, config.intermediate_size  # noqa: E741 (the paper's names)
    p_mm = L * (4 * H * H + 2 * H * I)
    return 2 * p_mm * length + 4 * L * length * length * H


def matmul_ceiling(rows, seconds=1.0):
    """GFLOP/s of BERT's FFN matmuls, (rows x 768) @ (768 x 3072) @ (3072 x 768), chained 4
    times so nothing can be hoisted, as one XLA program (faster than the plain graph here)."""
    x = tf.random.normal((rows, 768)) * 0.01
    w1, w2 = tf.random.normal((768, 3072)) * 0.01, tf.random.normal((3072, 768)) * 0.01

    @tf.function(jit_compile=True)
    def chain(x):
        for _ in range(4):
            x = tf.matmul(tf.matmul(x, w1), w2)
        return x

    chain(x).numpy()
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        chain(x).numpy()
        runs += 1
    return 4 * 4 * rows * 768 * 3072 * runs / (time.perf_counter() - start) / 1e9


def compiled(model, jit):
    model.compile(jit_compile=jit)
    return model.predict_on_batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=7, help="interleaved timing rounds; medians of these (default: 7)"
    )
    parser.add_argument("--length", type=int, default=128, help="sequence length T (default: 128)")
    parser.add_argument(
        "--layers", type=int, default=12, help="encoder layers L of the BERT-Base-shaped models (default: 12)"
    )
    args = parser.parse_args()

    config = kb.PRESETS["bert_base"].replace(hidden_act="gelu_tanh", num_hidden_layers=args.layers)
    hub = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings)
    ours = encoder_from_keras_hub(hub)
    def copy(model, dtype=None):
        twin = (kb.build_encoder(config, dtype=dtype) if model is ours else keras_hub.models.BertBackbone.from_config(
            {**hub.get_config(), **({"dtype": dtype} if dtype else {})}))
        twin.set_weights(model.get_weights())
        return twin

    hub_xla, ours_graph = copy(hub), copy(ours)
    ours_bf16, ours_bf16_xla, ours_bf16_graph = (copy(ours, "mixed_bfloat16") for _ in range(3))
    hub_bf16, hub_bf16_xla = copy(hub, "mixed_bfloat16"), copy(hub, "mixed_bfloat16")
    ours_serving, hub_serving = with_dtype(ours_bf16, "bfloat16"), copy(hub, "bfloat16")

    variants = {
        "keras-hub predict_on_batch": compiled(hub, False),
        "keras-hub predict_on_batch, XLA": compiled(hub_xla, True),
        "ours eager (model(x))": lambda x: ours(x, training=False),
        "ours predict_on_batch, no XLA": compiled(ours_graph, False),
        "ours predict_on_batch (default: XLA)": ours.predict_on_batch,
        "ours mixed_bfloat16 (default)": ours_bf16.predict_on_batch,
        "ours mixed_bfloat16, XLA": compiled(ours_bf16_xla, True),
        "ours mixed_bfloat16, no XLA": compiled(ours_bf16_graph, False),
        "keras-hub mixed_bfloat16": compiled(hub_bf16, False),
        "keras-hub mixed_bfloat16, XLA": compiled(hub_bf16_xla, True),
        "ours bfloat16 weights (with_dtype)": ours_serving.predict_on_batch,
        "keras-hub bfloat16 weights": compiled(hub_serving, False),
    }
    from keras_bert_lib.runtime.compile_path import choose_jit_compile

    for dtype in ("float32", "mixed_bfloat16"):
        print(f"default path for {dtype}: {'XLA' if choose_jit_compile(dtype)[0] else 'graph (oneDNN)'}: "
              f"{choose_jit_compile(dtype)[1]}")
    rows = []
    for size in (8, 1):
        batch = batch_of(size, args.length, config.vocab_size)
        for fn in variants.values():  # compile and warm up
            fn(batch), fn(batch)
        ceilings = []
        medians = interleaved_medians(
            {name: (lambda fn=fn: keras.tree.map_structure(np.asarray, fn(batch))) for name, fn in variants.items()},
            args.rounds, lambda: ceilings.append(matmul_ceiling(size * args.length, 0.5)))
        ceil = statistics.median(ceilings)
        flop = flops_per_sequence(config, args.length) * size
        hub_best = min(medians[n] for n in variants if n.startswith("keras-hub") and "bfloat16" not in n)
        hub_bf16_best = min(medians[n] for n in variants if n.startswith("keras-hub") and "bfloat16" in n)
        ours_fp32 = medians["ours predict_on_batch (default: XLA)"]
        print(f"\nbatch {size} x {args.length} tokens, L={config.num_hidden_layers}; "
              f"{flop / size / 1e9:.2f} GFLOP/seq; matmul ceiling {ceil:.0f} GFLOP/s (median)")
        print(f"{'variant':40s} {'median ms':>10s} {'seq/s':>8s} {'GFLOP/s':>8s} {'% ceil':>7s} "
              f"{'vs hub best':>11s}")
        for name in variants:
            t = medians[name]
            print(f"{name:40s} {t * 1e3:10.1f} {size / t:8.1f} {flop / t / 1e9:8.0f} "
                  f"{100 * flop / t / 1e9 / ceil:6.0f}% {hub_best / t:10.2f}x")
            rows.append({"batch": size, "variant": name, "median_ms": round(t * 1e3, 1),
                         "sequences_per_s": round(size / t, 2),
                         "share_of_matmul_ceiling": round(flop / t / 1e9 / ceil, 3),
                         "vs_keras_hub_best": round(hub_best / t, 3)})
        t_bf16 = medians["ours mixed_bfloat16 (default)"]
        print(f"our default bfloat16 over our default float32: {ours_fp32 / t_bf16:.2f}x; over keras-hub's "
              f"fastest bfloat16: {hub_bf16_best / t_bf16:.2f}x; float32 graph over XLA: "
              f"{ours_fp32 / medians['ours predict_on_batch, no XLA']:.2f}x")
        t_serving = medians["ours bfloat16 weights (with_dtype)"]
        print(f"our bfloat16 serving copy over our default float32: {ours_fp32 / t_serving:.2f}x; over "
              f"keras-hub's in bfloat16 weights: {medians['keras-hub bfloat16 weights'] / t_serving:.2f}x")

    batch = batch_of(8, args.length, config.vocab_size)
    a = ours.predict_on_batch(batch)["pooled_output"]
    for name, model in (("default", ours_bf16), ("XLA", ours_bf16_xla), ("with_dtype bfloat16", ours_serving)):
        b = np.asarray(model.predict_on_batch(batch)["pooled_output"], "float32")
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        print(f"bfloat16 ({name}) pooled_output cosine to float32: min {cos.min():.5f}")
    hub_out = hub.predict_on_batch(batch)["pooled_output"]
    print(f"max |ours - keras-hub| pooled_output: {np.max(np.abs(a - hub_out)):.2e}")
    write_results(__file__, rows, length=args.length, layers=config.num_hidden_layers, rounds=args.rounds)


if __name__ == "__main__":
    main()
