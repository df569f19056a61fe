"""The output of a corpus job, written in shards that survive a kill, then joined into one file.

While a job runs, `OUT.parts/` holds `job.json` (what made it: inputs, model, settings) and one
file per finished shard (`part-00000.jsonl`, ...), each written whole or not at all. A rerun with
the same job reads how many shards are done and starts after them; at the end the shards are
joined into OUT (also atomically) and the folder goes. Formats: `.jsonl`, `.csv` (nested values
as JSON), `.parquet` (needs pyarrow) and, for embeddings, `.npy` (rows in input order; a row with
an error is NaN).
"""

import csv
import glob
import io
import json
import os
import shutil

import numpy as np

from keras_bert_lib.atomic_write import atomic_path, atomic_write_text

FORMATS = (".jsonl", ".csv", ".parquet", ".npy")


def output_format(path, embeds):
    """The extension of `path` if a job can write it; a ValueError that lists the choices."""
    kind = os.path.splitext(path)[1].lower()
    if kind not in FORMATS:
        raise ValueError(f"--output {path}: write a {', '.join(FORMATS[:-1])} file (or .npy for embeddings).")
    if kind == ".npy" and not embeds:
        raise ValueError(f"--output {path}: .npy holds embeddings only; write predictions to .jsonl, .csv or .parquet.")
    return kind


class ShardedOutput:
    """The shards of one job's output (see the module docstring).

    Args:
        path: the final file.
        job: a JSON-able dict that identifies the job; a rerun with another job fails instead of
            mixing two jobs' rows (`overwrite` starts again).
        fields: the columns every row has, in order (for csv and Parquet).
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.corpus.outputs import ShardedOutput
        out = ShardedOutput(os.path.join(tempfile.mkdtemp(), "labels.jsonl"), {"model": "m"}, ["row", "label"])
        out.write(0, [{"row": 0, "label": "fresh"}])
        out.finish()
        ```
    """

    def __init__(self, path, job, fields, overwrite=False):
        self.path, self.fields = path, list(fields)
        self.kind = os.path.splitext(path)[1].lower()
        self.parts = path + ".parts"
        # A kill in the middle of a write leaves its temporary file (atomic_path's ".name-..."): never read, removed.
        folder, name = (glob.escape(p) for p in os.path.split(os.path.abspath(path)))
        for stale in glob.glob(os.path.join(glob.escape(self.parts), ".part-*")) + glob.glob(f"{folder}/.{name}-*"):
            os.remove(stale)
        if overwrite:
            shutil.rmtree(self.parts, ignore_errors=True)
        elif os.path.exists(path):  # the join is atomic: the file exists only once every shard is in it
            shutil.rmtree(self.parts, ignore_errors=True)  # (a kill while the parts were being removed)
            raise FileExistsError(f"{path} exists: the job finished before. Pass --overwrite to write it again.")
        job_file = os.path.join(self.parts, "job.json")
        if os.path.isfile(job_file):
            with open(job_file, encoding="utf-8") as f:
                before = json.load(f)
            if before != job:
                changed = sorted(k for k in set(before) | set(job) if before.get(k) != job.get(k))
                raise ValueError(f"{self.parts} holds part of another job (it differs in {', '.join(changed)}); "
                                 "rerun that job to finish it, or pass --overwrite to start this one.")
        else:
            atomic_write_text(job_file, json.dumps(job, indent=1))

    @property
    def done(self):
        """How many shards are finished: 0, 1, ... in a row (a later one alone does not count)."""
        n = 0
        while os.path.isfile(self._part(n)):
            n += 1
        return n

    def _part(self, index):
        return os.path.join(self.parts, f"part-{index:05d}{self.kind}")

    def write(self, index, rows):
        """Writes shard `index` (a list of row dicts) whole or not at all."""
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

    def finish(self):
        """Joins the shards into the final file (atomically) and removes the parts folder."""
        parts = [self._part(i) for i in range(self.done)]
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
