"""`keras-bert`: the command line over keras_bert_lib.

    keras-bert summary bert_base [--batch 1] [--length 128] [--dtype float32]

`summary` builds a preset, prints its layer table and parameter count, and times one compiled
forward pass. This module is the command line, so it writes to standard output.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _summary(args) -> int:
    import numpy as np

    from keras_bert_lib import PRESETS, build_encoder

    config = PRESETS[args.preset]
    if args.length > config.max_sequence_length:
        print(f"--length {args.length} exceeds {args.preset}'s {config.max_sequence_length} positions.",
              file=sys.stderr)
        return 2
    encoder = build_encoder(config, dtype=args.dtype, name=args.preset)
    encoder.summary(line_length=110, expand_nested=False)
    print(f"\n{args.preset}: {encoder.count_params():,} parameters "
          f"(L={config.num_hidden_layers}, H={config.hidden_size}, A={config.num_attention_heads}, "
          f"I={config.intermediate_size}, V={config.vocab_size})")

    rng = np.random.default_rng(0)
    batch = {"token_ids": rng.integers(1, config.vocab_size, (args.batch, args.length)).astype("int32"),
             "segment_ids": np.zeros((args.batch, args.length), "int32"),
             "padding_mask": np.ones((args.batch, args.length), "int32")}
    start = time.perf_counter()
    encoder.predict_on_batch(batch)
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        encoder.predict_on_batch(batch)
        times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    print(f"forward, batch {args.batch} x {args.length} tokens, {args.dtype}, XLA: "
          f"{median * 1e3:.1f} ms (median of {args.repeats}; first call with compilation "
          f"{compile_s:.1f} s), {args.batch / median:.1f} sequences/s")
    return 0


def main(argv=None) -> int:
    """Entry point of the `keras-bert` console command.

    Example:
        ```python
        from keras_bert_lib.cli import main
        main(["summary", "bert_tiny", "--length", "16", "--repeats", "1"])
        ```
    """
    from keras_bert_lib.config import PRESETS

    parser = argparse.ArgumentParser(prog="keras-bert", description="BERT-family encoders for Keras.")
    commands = parser.add_subparsers(dest="command", required=True)
    summary = commands.add_parser("summary", help="build a preset, print its layers and time a forward pass")
    summary.add_argument("preset", choices=sorted(PRESETS))
    summary.add_argument("--batch", type=int, default=1)
    summary.add_argument("--length", type=int, default=128)
    summary.add_argument("--dtype", default="float32", choices=["float32", "mixed_float16", "mixed_bfloat16"])
    summary.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    return _summary(args)


if __name__ == "__main__":
    sys.exit(main())
