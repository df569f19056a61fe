"""The output of a corpus job, written in shards that survive a kill, then joined into one file
that records what made it.

While a job runs, `OUT.parts/` holds `job.json` (what makes the job: the model's and the
inputs' bytes, the settings), one file per finished shard (`part-00000.jsonl`, ...), each
written beside, fsynced and renamed, and `shards.json`, each finished shard's row count and
SHA-256. A rerun with the same job checks the shards against `shards.json` and redoes a missing
or damaged one; at the end every shard is checked again, the rows counted against the inputs',
the shards joined into OUT (also beside, then renamed) and the folder removed. `OUT.job.json`
records the finished output: its job, its rows and its SHA-256. So the same job run again finds
its output finished; another job (other inputs, model or settings), or a file that the job did
not write, is refused rather than taken for a result. Formats: `.jsonl`, `.csv` (nested values as
JSON), `.parquet` (needs pyarrow) and, for embeddings, `.npy` (rows in input order; a row with an
error is NaN).
"""

import csv
import glob
import io
import json
import os
import shutil

import numpy as np

from keras_bert_lib.atomic_write import atomic_path, atomic_write_text
from keras_bert_lib.file_checks import fingerprint

FORMATS = (".jsonl", ".csv", ".parquet", ".npy")


def output_format(path, embeds):
    """The extension of `path` if a job can write it; a ValueError that lists the choices."""
    kind = os.path.splitext(path)[1].lower()
    if kind not in FORMATS:
        raise ValueError(f"--output {path}: write a {', '.join(FORMATS[:-1])} file (or .npy for embeddings).")
    if kind == ".npy" and not embeds:
        raise ValueError(f"--output {path}: .npy holds embeddings only; write predictions to .jsonl, .csv or .parquet.")
    return kind


def record_path(path):
    """Where the record of the finished output `path` is: `path.job.json`.

    Example:
        ```python
        from keras_bert_lib.corpus.outputs import record_path
        record_path("labels.jsonl")   # 'labels.jsonl.job.json'
        ```
    """
    return path + ".job.json"


def finished(path, job):
    """Whether `path` is the finished output of `job` (its record names `job` and its bytes are the
    ones recorded); False where there is no output yet. A ValueError, with the fix, where `path`
    holds something else: another job's output (naming what differs), a file this library did not
    write, or one changed since.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.corpus.outputs import finished
        assert finished(os.path.join(tempfile.mkdtemp(), "labels.jsonl"), {"model": "m"}) is False
        ```
    """
    if not os.path.exists(path):
        return False
    fix = "pass --overwrite to replace it, or write to another --output"
    try:
        with open(record_path(path), encoding="utf-8") as f:
            record = json.load(f)
        before = record["job"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"{path} exists, and no keras-bert job recorded writing it ({record_path(path)} is missing "
                         f"or damaged): {fix}.") from None
    if before != job:
        changed = sorted(k for k in set(before) | set(job) if before.get(k) != job.get(k))
        raise ValueError(f"{path} holds the output of another job (it differs in {', '.join(changed)}): {fix}.")
    if fingerprint(path) != record.get("sha256"):
        raise ValueError(f"{path} changed after the job wrote it (its bytes are not the ones recorded): {fix}.")
    return True


def remove(path):
    """Removes the output `path`, its record and its parts (`--overwrite`).

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.corpus.outputs import remove
        remove(os.path.join(tempfile.mkdtemp(), "labels.jsonl"))   # nothing there: nothing to do
        ```
    """
    for name in (path, record_path(path)):
        if os.path.isfile(name):
            os.remove(name)
    shutil.rmtree(path + ".parts", ignore_errors=True)


class ShardedOutput:
    """The shards of one job's output (see the module docstring).

    Args:
        path: the final file.
        job: a JSON-able dict that identifies the job; a rerun with another job fails instead of
            mixing two jobs' rows (`remove` first to start again). The record of the output holds it.
        fields: the columns every row has, in order (for csv and Parquet).
        shard_size: the rows a shard holds, part of the parts' identity (not of the output's).
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.corpus.outputs import ShardedOutput
        out = ShardedOutput(os.path.join(tempfile.mkdtemp(), "labels.jsonl"), {"model": "m"}, ["row", "label"], 10)
        out.write(0, [{"row": 0, "label": "fresh"}])
        out.finish(rows=1)
        ```
    """

    def __init__(self, path, job, fields, shard_size):
        self.path, self.job, self.fields = path, job, list(fields)
        self.kind = os.path.splitext(path)[1].lower()
        self.parts = path + ".parts"
        # A kill in the middle of a write leaves its temporary file (atomic_path's ".name-..."): never read, removed.
        folder, name = (glob.escape(p) for p in os.path.split(os.path.abspath(path)))
        for stale in glob.glob(os.path.join(glob.escape(self.parts), ".*")) + glob.glob(f"{folder}/.{name}-*"):
            os.remove(stale)
        job_file, job = os.path.join(self.parts, "job.json"), {**job, "shard_size": shard_size}
        if os.path.isfile(job_file):
            before = self._read(job_file)
            if before != job:
                changed = sorted(k for k in set(before) | set(job) if before.get(k) != job.get(k))
                raise ValueError(f"{self.parts} holds part of another job (it differs in {', '.join(changed)}); "
                                 "rerun that job to finish it, or pass --overwrite to start this one.")
        else:
            atomic_write_text(job_file, json.dumps(job, indent=1))
        self.shards = self._read(os.path.join(self.parts, "shards.json"), {})

    def _read(self, path, default=None):
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            if default is not None:
                return default
            raise
        except ValueError:
            raise ValueError(f"{path} is damaged (not JSON): pass --overwrite to start the job again.") from None

    def _part(self, index):
        return os.path.join(self.parts, f"part-{index:05d}{self.kind}")

    def _intact(self, index):
        entry = self.shards.get(str(index))
        return entry is not None and os.path.isfile(self._part(index)) and fingerprint(self._part(index)) == \
            entry["sha256"]

    def to_do(self, count):
        """The shards of `count` that are missing or damaged (not the bytes `shards.json` recorded),
        in order: what a rerun writes."""
        return [i for i in range(count) if not self._intact(i)]

    def write(self, index, rows):
        """Writes shard `index` (a list of row dicts) whole or not at all, and records its rows and
        checksum."""
        with atomic_path(self._part(index)) as tmp:
            if self.kind == ".jsonl":
                with open(tmp, "w", encoding="utf-8") as f:
                    f.writelines(json.dumps(row, ensure_ascii=False, default=jsonable) + "\n" for row in rows)
            elif self.kind == ".csv":
                with open(tmp, "w", encoding="utf-8", newline="") as f:
                    writer = csv.writer(f)
                    writer.writerows([_cell(row.get(k)) for k in self.fields] for row in rows)
            elif self.kind == ".parquet":
                pa = _pyarrow()
                data = {k: [row.get(k) for row in rows] for k in self.fields if k != "embedding"}
                if "embedding" in self.fields:  # float32 vectors, null where the row has an error
                    vectors = _vectors(rows)
                    data["embedding"] = pa.FixedSizeListArray.from_arrays(
                        pa.array(vectors.reshape(-1)), vectors.shape[1],
                        mask=pa.array(["embedding" not in r for r in rows]))
                pa.parquet.write_table(pa.table({k: data[k] for k in self.fields}), tmp)
            else:
                with open(tmp, "wb") as f:
                    np.save(f, _vectors(rows))
        self.shards[str(index)] = {"rows": len(rows), "sha256": fingerprint(self._part(index))}
        atomic_write_text(os.path.join(self.parts, "shards.json"), json.dumps(self.shards, indent=1))

    def finish(self, rows):
        """Checks every shard against its record and their rows against `rows` (the inputs'), joins
        them into the final file with its record (both written beside, then renamed) and removes
        the parts folder; a ValueError names a damaged shard (removed, so that a rerun redoes it)."""
        count = len(self.shards)
        bad = self.to_do(count)
        if bad:
            for index in bad:
                if os.path.exists(self._part(index)):
                    os.remove(self._part(index))
            raise ValueError(f"{self._part(bad[0])} is missing or damaged (its bytes are not the ones written): it was "
                             "removed; run the same command again to redo it.")
        written = sum(self.shards[str(i)]["rows"] for i in range(count))
        if written != rows:
            raise ValueError(f"{self.parts} holds {written} rows and the inputs {rows}: an input changed while the "
                             "job ran; pass --overwrite to start again.")
        parts = [self._part(i) for i in range(count)]
        with atomic_path(self.path) as tmp:
            if self.kind in (".jsonl", ".csv"):
                with open(tmp, "wb") as out:
                    if self.kind == ".csv":
                        text = io.StringIO()
                        csv.writer(text).writerow(self.fields)
                        out.write(text.getvalue().encode("utf-8"))
                    for part in parts:
                        with open(part, "rb") as f:
                            shutil.copyfileobj(f, out)
            elif self.kind == ".parquet":
                _join_parquet(parts, tmp)
            else:
                _join_npy(parts, tmp)
            record = {"job": self.job, "rows": rows, "sha256": fingerprint(tmp)}
            atomic_write_text(record_path(self.path), json.dumps(record, indent=1))
        shutil.rmtree(self.parts)


def jsonable(value):
    """`json.dumps`'s `default` for what it cannot write itself: an embedding's numpy array.

    Example:
        ```python
        import json
        import numpy as np
        from keras_bert_lib.corpus.outputs import jsonable
        json.dumps({"embedding": np.ones(2, np.float32)}, default=jsonable)   # '{"embedding": [1.0, 1.0]}'
        ```
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _cell(value):
    if isinstance(value, (list, dict, np.ndarray)):
        return json.dumps(value, ensure_ascii=False, default=jsonable)
    return value


def _vectors(rows):
    width = next((len(r["embedding"]) for r in rows if "embedding" in r), 0)
    out = np.full((len(rows), width), np.nan, np.float32)
    for i, row in enumerate(rows):
        if "embedding" in row:
            out[i] = row["embedding"]
    return out


def _join_npy(parts, path):
    """One (rows, width) float32 .npy of the shards' arrays: the header, then each shard's bytes in
    turn (streamed, not a memory map, whose written pages would count in the job's memory)."""
    shapes = [np.load(p, mmap_mode="r").shape for p in parts]
    width = max((s[1] for s in shapes if s[0]), default=0)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
              "shape": (sum(s[0] for s in shapes), width)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        for part, (n, w) in zip(parts, shapes):
            f.write((np.load(part) if w == width else np.full((n, width), np.nan, np.float32)).tobytes())


def _join_parquet(parts, path):
    pa = _pyarrow()
    schema = pa.unify_schemas([pa.parquet.read_schema(p) for p in parts], promote_options="permissive") \
        if parts else pa.schema([])
    with pa.parquet.ParquetWriter(path, schema) as writer:
        for part in parts:
            writer.write_table(pa.parquet.read_table(part).cast(schema))


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ImportError("Parquet needs pyarrow: pip install 'keras-bert-lib[corpus]'.") from None
    return pyarrow
