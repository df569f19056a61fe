"""Progress that reads well where it goes: a live bar on a terminal, one line per bar in a log."""

import sys

import keras


def progress_verbose():
    """Keras' `verbose` for progress: 1 (a bar redrawn in place) when standard output is a
    terminal, else 2 (one line per epoch or bar), so that a log file gets lines, not hundreds of
    carriage-return frames. Keras' own check counts every POSIX process as interactive.

    Example:
        ```python
        from keras_bert_lib.progress import progress_verbose
        verbose = progress_verbose()   # 2 (under pytest, whose stdout is captured)
        ```
    """
    return 1 if getattr(sys.stdout, "isatty", lambda: False)() else 2


def progress_bar(total, unit_name, stateful_metrics=None):
    """A `keras.utils.Progbar` of `total` steps that follows `progress_verbose()`; the values named
    in `stateful_metrics` are shown as given (a rate), not averaged.

    Example:
        ```python
        from keras_bert_lib.progress import progress_bar
        bar = progress_bar(3, "file")
        for i in range(3):
            bar.update(i + 1)
        ```
    """
    return keras.utils.Progbar(total, unit_name=unit_name, stateful_metrics=stateful_metrics,
                               verbose=progress_verbose())
