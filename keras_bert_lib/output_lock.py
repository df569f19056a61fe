"""One writer per output: a run folder, a corpus job's output file or an export folder is locked
while a command writes it, so that a second command on the same output stops at once with one
line naming the first, instead of both writing and one reporting success over the other's files.
"""

import contextlib
import os

try:
    import fcntl
except ImportError:  # Windows: no flock; outputs are not locked there (docs/design.md)
    fcntl = None


@contextlib.contextmanager
def output_lock(lock_file, output, flag):
    """Holds an exclusive lock on `lock_file` (made, with this process's ID in it, and removed at
    the end) for the block; raises a ValueError in one line that names `output`, the process that
    holds it, and `flag` (the setting to change) if another process holds it.

    The lock is the operating system's (flock): it goes when its process does, however that
    ends, so a lock left by a killed process is taken over without a word.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.output_lock import output_lock
        folder = tempfile.mkdtemp()
        with output_lock(os.path.join(folder, ".lock"), folder, "--output-dir"):
            pass   # write the folder
        ```
    """
    if fcntl is None:
        yield
        return
    os.makedirs(os.path.dirname(os.path.abspath(lock_file)), exist_ok=True)
    while True:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: say by whom
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise ValueError(f"{output} is being written by process {holder} (keras-bert): wait for it to end, "
                             f"stop it, or choose another {flag}.") from None
        try:
            same = os.stat(lock_file).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed it between our open and our lock: take the new one
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock_file)
        os.close(fd)  # releases the lock
