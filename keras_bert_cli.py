"""The `keras-bert` command's entry point: `keras-bert --help` at once, every command in
`keras_bert_lib.cli`.

It sits outside the keras_bert_lib package on purpose. `import keras_bert_lib` registers every
class a saved model names (so that `keras.models.load_model` reads a run's model.keras), which
imports Keras and so TensorFlow, seconds of start-up. The list of commands needs none of it: it
lives in `keras_bert_commands`, which both this module and `keras_bert_lib.cli` read.
"""

import atexit
import gc
import os
import sys

from keras_bert_commands import COMMANDS, build_parser

# What TensorFlow 2.21 writes to standard error while its libraries load, in every process that
# imports it, before any setting is read: no environment variable silences these lines.
_START_UP_NOTES = (r"^(WARNING: All log messages before absl::InitializeLog\(\) is called|I0000 \S+ +\d+ "
                   r"(port|cudart_stub|cpu_feature_guard)\.cc:|To enable the following instructions: |"
                   r"INFO: Created TensorFlow Lite XNNPACK delegate for CPU\.|"
                   r"Sharding callback duration: \d+ microseconds$)")
_FILTER = ("import re, signal, sys\n"
           "signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the command, whose last words pass here\n"
           "for line in iter(sys.stdin.buffer.readline, b''):\n"
           "    if not re.match(sys.argv[1].encode(), line):\n"
           "        sys.stdout.buffer.write(line)\n"
           "        sys.stdout.buffer.flush()\n")


_EXIT_CODE = []  # the command's exit code, once it has returned one
_FILTER_PROCESS = []  # the process that filters standard error, when one runs


def _exit_without_teardown():
    """Ends the process with the command's exit code once the exit handlers registered after
    this one (TensorFlow's, multiprocessing's, logging's) have run.

    Registered just before TensorFlow is imported, so it runs after them. What it skips is the
    interpreter's teardown, which frees TensorFlow's modules one by one after the command's work
    is done. Handlers registered earlier (a `sitecustomize`'s, coverage's subprocess measurement)
    do not run. A command that raised (a traceback) is torn down as usual. The standard-error
    filter is given a moment to pass on the last lines, so that they come before the shell's
    prompt."""
    if _EXIT_CODE and isinstance(_EXIT_CODE[0], int):
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        if _FILTER_PROCESS:
            import subprocess

            os.close(2)  # this process's end of the pipe; a child still writing keeps it open
            try:  # the filter passes each line on as it reads it: a moment drains what is queued
                _FILTER_PROCESS[0].wait(timeout=0.2)
            except subprocess.TimeoutExpired:  # a child (multiprocessing's resource tracker) holds the pipe
                pass
        os._exit(_EXIT_CODE[0])


def _filter_stderr():
    """Routes this process's standard error, and its children's, through a small process that
    drops TensorFlow's start-up notes (`_START_UP_NOTES`) and passes every other line on at once.
    A separate process, not a thread, so that nothing is lost if this one dies: it drains the
    pipe until the last writer is gone (this process, its conversions, multiprocessing's
    resource tracker). `TF_CPP_MIN_LOG_LEVEL` below 3 shows everything."""
    import subprocess

    read, write = os.pipe()
    _FILTER_PROCESS.append(subprocess.Popen([sys.executable, "-c", _FILTER, _START_UP_NOTES], stdin=read,
                                            stdout=sys.stderr.fileno(), close_fds=True))
    os.close(read)
    sys.stderr.flush()
    os.dup2(write, 2)
    os.close(write)


def main(argv=None):
    """The `keras-bert` console command: `--help` and usage errors here, commands in keras_bert_lib.cli.

    Example:
        ```python
        from keras_bert_cli import main
        # main(["quickstart", "--help"])
        ```
    """
    console = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    # TensorFlow's C++ log lines at level ERROR and below (an `E0000 ... cuInit ... CUDA error` on a
    # machine without a GPU, its CPU-feature notes) are noise on a command line. An exported value wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if not argv or argv[0].startswith("-") or argv[0] not in {name for name, _, _ in COMMANDS}:
        parser, _ = build_parser()
        parser.parse_args(argv[:1])  # prints the help, or the usage error, and exits
    if console and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3":
        _filter_stderr()
    if console:
        atexit.register(_exit_without_teardown)
    from keras_bert_lib.cli import main as run

    if console:
        # The process is this command's: what the imports built (TensorFlow, Keras, the library)
        # lives until it exits, so the cycle collector's full passes during the run leave it out.
        gc.freeze()
    code = run(argv)
    if console:
        _EXIT_CODE.append(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
