"""Interleaved timing rounds: every variant once per round, in turn, so machine noise hits all."""

import statistics
import time


def interleaved_medians(variants, rounds, between_rounds=None, pause=0.0):
    """{name: median seconds} over `rounds` rounds of calling each variant once; `between_rounds`
    (optional) runs after each round, e.g. to sample the matmul ceiling under the same load.
    `pause` seconds of sleep before each call let the previous variant's spinning worker threads
    park (ONNX Runtime's and TensorFlow's thread pools spin after their work; on 2 cores the next
    variant otherwise shares the cores with them: ONNX Runtime int8 at batch 1 measured 81 ms right
    after Keras, 45 ms after a 0.2 s pause or with its spinning off)."""
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            time.sleep(pause)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
        if between_rounds is not None:
            between_rounds()
    return {name: statistics.median(t) for name, t in times.items()}
