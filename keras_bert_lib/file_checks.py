"""Checks of the user's files and folders, made before any work, with errors that say the fix."""

import hashlib
import io
import json
import os
import tempfile


def not_utf8_error(path):
    """A ValueError naming the first line of `path` that is not UTF-8, its bad byte, and how to
    convert the file; None if the whole file decodes.

    Readers call it when decoding failed, to say where (Python's own message gives a byte offset
    and no file); `check_utf8` calls it up front.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import not_utf8_error
        path = os.path.join(tempfile.mkdtemp(), "notes.txt")
        open(path, "wb").write("fine\\ncaf\\xe9\\n".encode("latin-1"))
        print(not_utf8_error(path))   # ...notes.txt, line 2: not UTF-8 (byte 0xe9 at column 4)...
        ```
    """
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as e:
                stem, extension = os.path.splitext(path)
                return ValueError(
                    f"{path}, line {number}: not UTF-8 (byte 0x{line[e.start]:02x} at column {e.start + 1}). "
                    f"Convert the file from its encoding first, e.g. for Latin-1: "
                    f"iconv -f latin1 -t utf-8 {path} > {stem}.utf8{extension}")
    return None


def open_text(path, newline=None):
    """The text of a UTF-8 file (a byte-order mark dropped) as a file object, like
    `open(path, encoding="utf-8-sig", newline=newline)`; a file that is not UTF-8 raises
    `not_utf8_error`'s ValueError (file, line, fix) instead of Python's byte offset. For the
    readers, which hold the whole file's rows anyway.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import open_text
        path = os.path.join(tempfile.mkdtemp(), "notes.txt")
        open(path, "w", encoding="utf-8").write("Café\\n")
        with open_text(path) as f:
            assert f.read() == "Café\\n"
        ```
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        return io.StringIO(data.decode("utf-8-sig"), newline=newline)
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None


def read_json(path):
    """The JSON in file `path`; a file that is not JSON (cut short by a crash, edited by hand)
    raises a ValueError in one line that names it, instead of the decoder's line and column alone.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import read_json
        path = os.path.join(tempfile.mkdtemp(), "config.json")
        open(path, "w").write('{"hidden_size": 8')
        try:
            read_json(path)
        except ValueError as e:
            print(e)   # .../config.json is not JSON (Expecting ',' delimiter: ...): restore it, or write it again.
        ```
    """
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} is not JSON ({e}): restore it, or write it again.") from None


def check_utf8(paths):
    """Raises `not_utf8_error`'s ValueError for the first of `paths` that is not UTF-8 text.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import check_utf8
        path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(path, "w", encoding="utf-8").write("Café au lait.\\n")
        check_utf8([path])   # passes
        ```
    """
    for path in paths:
        error = not_utf8_error(path)
        if error is not None:
            raise error


def check_writable_folder(folder, flag):
    """Makes `folder` (and its parents) and proves a file can be written in it, or raises a
    ValueError in one line that names the folder, the reason and `flag` (the setting to change).
    Runs write only after this, so a bad path fails before minutes of work, not after.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import check_writable_folder
        check_writable_folder(os.path.join(tempfile.mkdtemp(), "run"), "--output-dir")
        ```
    """
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        if isinstance(e, (FileExistsError, NotADirectoryError)):
            reason = "a file is in the way (the path or one of its parents is a file, not a folder)"
        raise ValueError(f"cannot write in {folder}: {reason}; choose another {flag}.") from None


def fingerprint(path):
    """A SHA-256 of a file's bytes, or of a folder's file names and bytes: the same data under
    another path (a reinstalled package, a moved checkout) has the same fingerprint.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.file_checks import fingerprint
        folder = tempfile.mkdtemp()
        open(os.path.join(folder, "vocab.txt"), "w").write("[PAD]\\n")
        assert len(fingerprint(folder)) == 64
        ```
    """
    digest = hashlib.sha256()
    files = [("", path)] if os.path.isfile(path) else sorted(
        (os.path.relpath(os.path.join(root, name), path), os.path.join(root, name))
        for root, _, names in os.walk(path) for name in names if not name.startswith("."))
    for name, file in files:
        digest.update(name.encode("utf-8") + b"\0")
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
