"""Atomic file writes: a temporary file beside the target, then a rename."""

import contextlib
import os
import tempfile


def atomic_write_text(path, text):
    """Writes `text` (str, or bytes) to `path` so that readers see the old file or the whole new
    one, never a part.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.atomic_write import atomic_write_text
        atomic_write_text(os.path.join(tempfile.mkdtemp(), "notes.txt"), "hello\\n")
        ```
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") if isinstance(text, bytes) else open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


@contextlib.contextmanager
def atomic_path(path):
    """A temporary path beside `path` to write in any way (a Parquet writer, a memory-mapped
    array); it becomes `path` when the block ends, and is deleted if the block raises.

    Example:
        ```python
        import os, tempfile
        import numpy as np
        from keras_bert_lib.atomic_write import atomic_path
        target = os.path.join(tempfile.mkdtemp(), "vectors.npy")
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as f:
                np.save(f, np.zeros((2, 3)))
        ```
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}-")
    os.close(fd)
    try:
        yield tmp
        # mkstemp makes the file private (0600); give it the mode an open() would have.
        os.chmod(tmp, os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o666 & ~_umask())
        fsync_file(tmp)  # the bytes are on disk before the name points at them: a crash leaves the old file or the new
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def default_mode(path):
    """Gives `path` the mode that `open()` or `os.makedirs` would have given it under the
    process's umask (0644 for a file, 0755 for a folder under the usual 022): for what private
    temporary names made (`tempfile.mkdtemp` folders are 0700, `mkstemp` files and safetensors'
    `save_file` 0600), so that a server running as another user (TF Serving) can read it.

    Example:
        ```python
        import os, stat, tempfile
        from keras_bert_lib.atomic_write import default_mode
        folder = tempfile.mkdtemp()   # 0700
        default_mode(folder)          # 0755 under umask 022
        mask = os.umask(0)
        os.umask(mask)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o777 & ~mask
        ```
    """
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~_umask())


def fsync_file(path):
    """Waits until `path`'s bytes are on disk, not only in the page cache (before a rename that
    publishes it: a crash then leaves the old name or the whole new file).

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.atomic_write import fsync_file
        path = os.path.join(tempfile.mkdtemp(), "a.txt")
        open(path, "w").write("a")
        fsync_file(path)
        ```
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
