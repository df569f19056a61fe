"""Interleaved timing rounds: every variant once per round, in turn, so machine noise hits all."""

import statistics
import time


def interleaved_medians(variants, rounds, between_rounds=None):
    """{name: median seconds} over `rounds` rounds of calling each variant once; `between_rounds`
    (optional) runs after each round, e.g. to sample the matmul ceiling under the same load."""
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
        if between_rounds is not None:
            between_rounds()
    return {name: statistics.median(t) for name, t in times.items()}
