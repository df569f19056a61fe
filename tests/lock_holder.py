"""Another process that holds an output's lock (`output_lock`) until the block ends, then dies by
SIGKILL, as a crashed job would: the second process of the tests that check one writer per output.
It loads `keras_bert_lib/output_lock.py` by its path (the file imports only the standard library),
so it holds the lock in a fraction of a second instead of importing TensorFlow with the package."""

import contextlib
import pathlib
import subprocess
import sys

import keras_bert_lib.output_lock

_HOLD = ("import importlib.util, sys, time\n"
         "spec = importlib.util.spec_from_file_location('output_lock', sys.argv[2])\n"
         "module = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(module)\n"
         "output_lock = module.output_lock\n"
         "with output_lock(sys.argv[1], sys.argv[1], '--output'):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(600)\n")


@contextlib.contextmanager
def lock_held_elsewhere(lock_file):
    """Yields the Popen of a process that holds `lock_file`; SIGKILLs it at the end."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, lock_file,
                               pathlib.Path(keras_bert_lib.output_lock.__file__)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()
