"""A preset at a glance: its layers, its parameter count, and the time of one compiled forward pass."""

import time

import numpy as np

from keras_bert_lib.config import PRESETS
from keras_bert_lib.models.factories import build_encoder
from keras_bert_lib.runtime.compile_path import describe, graph_kernels


def summarize(preset, batch=1, length=128, dtype="float32", repeats=5):
    """The text `keras-bert summary` prints: the preset's layer table, its parameter count, the
    compiled path its dtype takes on this CPU, and the median time of `repeats` forward passes on
    random ids of shape (batch, length), after one that compiles.

    Example:
        ```python
        from keras_bert_lib.models.summary import summarize
        print(summarize("bert_tiny", length=16, repeats=1).splitlines()[-1])   # forward, batch 1 x 16 ...
        ```
    """
    config = PRESETS[preset]
    if length > config.max_sequence_length:
        raise ValueError(f"--length {length} exceeds {preset}'s {config.max_sequence_length} positions.")
    encoder = build_encoder(config, dtype=dtype, name=preset)
    lines = []
    encoder.summary(line_length=110, expand_nested=False, print_fn=lambda line, **_: lines.append(line))
    lines += ["", f"{preset}: {encoder.count_params():,} parameters (L={config.num_hidden_layers}, "
                  f"H={config.hidden_size}, A={config.num_attention_heads}, I={config.intermediate_size}, "
                  f"V={config.vocab_size})", describe(dtype, config.hidden_size)]
    rng = np.random.default_rng(0)
    ids = {"token_ids": rng.integers(1, config.vocab_size, (batch, length)).astype("int32"),
           "segment_ids": np.zeros((batch, length), "int32"), "padding_mask": np.ones((batch, length), "int32")}
    start = time.perf_counter()
    encoder.predict_on_batch(ids)
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        encoder.predict_on_batch(ids)
        times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    path = "XLA" if encoder.jit_compile else graph_kernels()
    lines.append(f"forward, batch {batch} x {length} tokens, {dtype}, {path}: {median * 1e3:.1f} ms (median of "
                 f"{repeats}; first call with compilation {compile_s:.1f} s), {batch / median:.1f} sequences/s")
    return "\n".join(lines)
