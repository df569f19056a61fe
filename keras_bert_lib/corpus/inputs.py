"""Reading a corpus a chunk at a time: `.txt` (one text per line), `.csv`, `.tsv`, `.jsonl` and
`.parquet` files, in the order given, each row with its number. Nothing is read whole: memory
holds one chunk. A value that is null, missing or not UTF-8 stays in its row, marked, so that the
row gets an error field instead of stopping the job.
"""

import csv
import glob
import io
import json
import os
import sys

READERS = (".txt", ".csv", ".tsv", ".jsonl", ".parquet")


class BadValue(str):
    """A cell that cannot be a text: null, missing, or bytes that are not UTF-8; `str()` is why."""


NULL = BadValue("null or missing")
NOT_UTF8 = BadValue("not UTF-8")


def input_files(patterns):
    """The files that `patterns` (paths or globs) name, in order; a ValueError before any work
    for a pattern that matches nothing or a file of a kind that cannot be read.

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import input_files
        # input_files(["reviews/*.csv"])   # ['reviews/a.csv', 'reviews/b.csv']
        ```
    """
    files = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not found or not all(os.path.isfile(f) for f in found):
            raise ValueError(f"{pattern}: no such file; pass files or globs of .txt, .csv, .tsv, .jsonl or .parquet.")
        for f in found:
            if file_kind(f) not in READERS:
                raise ValueError(f"{f}: a {file_kind(f) or 'file without extension'} cannot be read; inputs are "
                                 f"{', '.join(READERS)} files.")
        files += found
    return files


def file_kind(path):
    """The lower-case extension that says how `path` is read (".csv", ...).

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import file_kind
        file_kind("Tickets.CSV")   # '.csv'
        ```
    """
    return os.path.splitext(path)[1].lower()


def _text(value):
    if value is None:
        return NULL
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return NOT_UTF8
    value = str(value)
    # Read with errors="surrogateescape": a byte that is not UTF-8 comes back as a lone surrogate.
    return NOT_UTF8 if any("\udc80" <= c <= "\udcff" for c in value) else value


def columns_of(path):
    """The column names of one input file (`text` for a .txt file): a csv/tsv header, the keys of
    a .jsonl file's first row, a .parquet schema.

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import columns_of
        # columns_of("reviews.csv")   # ['id', 'text', 'label']
        ```
    """
    kind = file_kind(path)
    if kind == ".txt":
        return ["text"]
    if kind == ".parquet":
        return list(_parquet().ParquetFile(path).schema_arrow.names)
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        if kind == ".jsonl":
            for line in f:
                if line.strip():
                    try:
                        row = json.loads(line)
                    except ValueError as e:
                        raise ValueError(f"{path}: its first row is not JSON ({e}).") from None
                    if not isinstance(row, dict):
                        raise ValueError(f"{path}: a .jsonl row must be an object of columns, not {row!r:.60}.")
                    return list(row)
            return []
        return next(csv.reader(f, **_dialect(kind)), [])


def _dialect(kind):
    # GLUE's .tsv files are not quoted: a quote is part of the text (as finetune reads them).
    return {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if kind == ".tsv" else {}


def _parquet():
    try:
        import pyarrow.parquet
    except ImportError:
        raise ImportError("Parquet needs pyarrow: pip install 'keras-bert-lib[corpus]'.") from None
    return pyarrow.parquet


def check_columns(files, wanted, optional=()):
    """Raises a ValueError, before any work, when a file lacks a column of `wanted` or the files'
    columns differ (a mixed schema); returns the `optional` columns that the files have.

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import check_columns
        # check_columns(["a.csv", "b.csv"], ["text"], optional=["text_pair"])   # []
        ```
    """
    first = None
    for path in files:
        names = columns_of(path)
        if first is None:
            first = (path, names)
        elif set(names) != set(first[1]) and file_kind(path) != ".txt":
            raise ValueError(f"{path} has columns {names}, but {first[0]} has {first[1]}: the inputs of one job "
                             "must have the same columns (a mixed schema); run them as separate jobs.")
        missing = [c for c in wanted if c not in names]
        if missing:
            raise ValueError(f"{path} has no column {missing[0]!r} (its columns: {names}); choose the text "
                             "column(s) with --text-column / --text-pair-column.")
    return [c for c in optional if first and c in first[1]]


def count_rows(files, opener=None):
    """The rows of `files` (lines of text, records of csv/tsv/jsonl, rows of parquet), read in one
    streaming pass, for the progress bar's total and ETA.

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import count_rows
        # count_rows(["reviews.txt"])   # 100000
        ```
    """
    return sum(1 for _ in _rows(files, (), opener)) if files else 0


def _rows(files, columns, opener=None):
    """(file, {column: text or BadValue}) for every row of `files`, in order; `opener(path)` opens
    a file for binary reading (default: `open`; Beam passes its FileSystems, for gs:// and s3://)."""
    for path in files:
        with (opener or (lambda p: open(p, "rb")))(path) as raw:
            yield from ((path, row) for row in file_rows(raw, file_kind(path), path, columns))


def file_rows(raw, kind, path, columns):
    """{column: text or BadValue} for every row of one open binary file of `kind` (`path` names it
    in errors).

    Example:
        ```python
        import io
        from keras_bert_lib.corpus.inputs import file_rows
        list(file_rows(io.BytesIO(b"text\\nfine\\n"), ".csv", "a.csv", ["text"]))   # [{'text': 'fine'}]
        ```
    """
    if kind == ".parquet":
        table = _parquet().ParquetFile(raw)
        if not columns:
            for group in range(table.num_row_groups):
                yield from ({} for _ in range(table.metadata.row_group(group).num_rows))
            return
        for batch in table.iter_batches(batch_size=4096, columns=list(columns)):
            values = {c: batch.column(c).to_pylist() for c in columns}
            for i in range(batch.num_rows):
                yield {c: _text(values[c][i]) for c in columns}
        return
    f = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="" if kind != ".txt" else None)
    if kind == ".txt":
        for line in f:
            yield {c: _text(line.rstrip("\r\n")) for c in columns}
    elif kind == ".jsonl":
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}, line {number}: not JSON ({e}).") from None
            yield {c: _text(row.get(c)) if isinstance(row, dict) else NULL for c in columns}
    else:
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        for row in csv.DictReader(f, **_dialect(kind)):
            yield {c: _text(row.get(c)) for c in columns}


def read_chunks(files, columns, chunk_size, skip=0, opener=None):
    """Lists of at most `chunk_size` rows of `files`, each row (row number from 0 across the files,
    {column: text or BadValue}), the first `skip` rows passed over.

    Example:
        ```python
        from keras_bert_lib.corpus.inputs import read_chunks
        # next(read_chunks(["a.txt"], ["text"], 2))   # [(0, {'text': 'first line'}), (1, {'text': 'second'})]
        ```
    """
    chunk = []
    for number, (_, row) in enumerate(_rows(files, columns, opener)):
        if number < skip:
            continue
        chunk.append((number, row))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
