"""Atomic file writes: a temporary file beside the target, then a rename."""

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
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}-")
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
        # mkstemp makes the file private (0600); give it the mode an open() would have.
        os.chmod(tmp, os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
