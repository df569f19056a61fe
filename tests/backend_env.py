"""The environment of a test's subprocess on another Keras backend, on the CPU."""

import os

# A JAX test's process compiles every program anew with XLA and runs it for a few steps, so the
# compile outweighs the steps: LLVM's optimisation of the machine code is turned down (XLA's own
# passes still fuse and rewrite the program). Not for TensorFlow's jit_compile in the suite: its
# tests run XLA programs for up to hundreds of steps, which run several times slower unoptimised.
FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")


def backend_env(backend, *xla_flags):
    """os.environ with Keras on `backend` ("jax" or "torch") and no GPU; for JAX, XLA_FLAGS gets
    `FAST_COMPILE`, then the caller's own XLA_FLAGS, then the test's `xla_flags`: a later flag
    wins, so a caller's flags can undo ours but not a setting the test needs (its device count)."""
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    if backend == "jax":
        env["XLA_FLAGS"] = " ".join(f for f in (*FAST_COMPILE, os.environ.get("XLA_FLAGS"), *xla_flags) if f)
    return env
