"""Another process that holds an output's lock (`output_lock`) until the block ends, then dies by
SIGKILL, as a crashed job would: the second process of the tests that check one writer per output."""

import contextlib
import subprocess
import sys

_HOLD = ("import sys, time\n"
         "from keras_bert_lib.output_lock import output_lock\n"
         "with output_lock(sys.argv[1], sys.argv[1], '--output'):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(600)\n")


@contextlib.contextmanager
def lock_held_elsewhere(lock_file):
    """Yields the Popen of a process that holds `lock_file`; SIGKILLs it at the end."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, lock_file], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()
