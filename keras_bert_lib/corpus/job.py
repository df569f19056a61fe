"""`keras-bert predict` / `keras-bert embed`: a model over a corpus, streamed, in resumable shards."""

import logging
import os
import time

from keras_bert_lib.corpus.inputs import BadValue, check_columns, count_rows, input_files, read_chunks
from keras_bert_lib.corpus.models import load_corpus_model, predict_rows
from keras_bert_lib.corpus.outputs import ShardedOutput, output_format
from keras_bert_lib.progress import progress_bar

logger = logging.getLogger(__name__)


def run_corpus_job(model, inputs, output, command="predict", text_column=None, text_pair_column=None,
                   id_column=None, batch_size=32, shard_size=10000, overwrite=False, progress=True):
    """Runs `model` over every row of `inputs` and writes one output row per input row, in input
    order, to `output`; returns {"rows", "errors", "seconds", "texts_per_second", "output"}.

    Streams: one shard of `shard_size` rows is in memory at a time, predicted by length (the
    model's own `predict`, or similar lengths together for a SavedModel) and written whole
    (`corpus.outputs`). Killed, the same call continues after the last finished shard; a finished
    output is left alone unless `overwrite`. A row whose text is null, missing or not UTF-8 gets
    an `error` field instead of a result. Every error about the files, columns or model comes
    before any work.

    Args:
        model: a fine-tuning run's folder (or its model.keras), an exported SavedModel folder, or
            (for "embed") a checkpoint folder.
        inputs: paths or globs of .txt, .csv, .tsv, .jsonl or .parquet files.
        output: a .jsonl, .csv or .parquet file (or .npy for "embed").
        command: "predict" (the task's rows: label and score, entities with offsets, answers,
            scores) or "embed" (an `embedding` per row).
        text_column / text_pair_column: the input columns of the model's first and second text
            (default: the names the model's task uses: text, text_pair; question, context).
        id_column: a column copied to each output row as `id` (default: none; every row has `row`,
            its number from 0 across the inputs).
    Example:
        ```python
        from keras_bert_lib.corpus import run_corpus_job
        # run_corpus_job("runs/classify", ["tickets.csv"], "labels.jsonl")
        ```
    """
    files = input_files(inputs)
    output_format(output, embeds=command == "embed")  # the extension, before the model loads
    loaded = load_corpus_model(model, command, batch_size)  # embed: a model that embeds, or a ValueError
    names = dict(zip(loaded.roles, (text_column, text_pair_column)))
    columns = {role: names.get(role) or role for role in loaded.roles}
    required = [columns[r] for r in loaded.roles if r not in loaded.optional]
    present = check_columns(files, required + ([id_column] if id_column else []),
                            optional=[columns[r] for r in loaded.optional])
    roles = [r for r in loaded.roles if r not in loaded.optional or columns[r] in present]
    job = {"command": command, "model": os.path.abspath(model), "inputs": [_stamp(f) for f in files],
           "columns": {r: columns[r] for r in roles}, "id_column": id_column, "shard_size": shard_size}
    fields = ["row"] + (["id"] if id_column else []) + loaded.fields + ["error"]
    try:
        out = ShardedOutput(output, job, fields, overwrite=overwrite)
    except FileExistsError:  # finished before: left alone
        return {"rows": None, "errors": None, "seconds": 0.0, "texts_per_second": None, "output": output,
                "skipped": True}
    done = out.done
    total = count_rows(files)
    if done:
        logger.warning("Resuming: %d of %d rows are done (%d shards in %s).", min(done * shard_size, total), total,
                       done, out.parts)
    bar = _bar(total, min(done * shard_size, total)) if progress else None
    wanted = [columns[r] for r in roles] + ([id_column] if id_column else [])
    start, seen, errors = time.perf_counter(), 0, 0
    for index, chunk in enumerate(read_chunks(files, wanted, shard_size, skip=done * shard_size), start=done):
        rows = _predict_chunk(loaded, roles, columns, id_column, chunk)
        errors += sum("error" in r for r in rows)
        out.write(index, rows)
        seen += len(chunk)
        if bar:
            bar.update(min(done * shard_size, total) + seen,
                       [("texts/s", seen / max(time.perf_counter() - start, 1e-9))])
    out.finish()
    seconds = time.perf_counter() - start
    if errors:
        logger.warning("%d rows had no text to read (null, missing or not UTF-8): their output rows hold an "
                       "`error` instead of a result.", errors)
    return {"rows": total, "errors": errors, "seconds": seconds, "texts_per_second": seen / max(seconds, 1e-9),
            "output": output, "skipped": False}


def _stamp(path):
    info = os.stat(path)
    return [os.path.abspath(path), info.st_size, info.st_mtime_ns]


def _predict_chunk(model, roles, columns, id_column, chunk):
    """One output row per (number, values) row of `chunk`: {"row", "id"?} and a result or an error."""
    heads = [{"row": number, **({"id": None if isinstance(values[id_column], BadValue) else values[id_column]}
                                 if id_column else {})} for number, values in chunk]
    results = predict_rows(model, [{r: values[columns[r]] for r in roles} for _, values in chunk], columns)
    return [{**head, **result} for head, result in zip(heads, results)]


def _bar(total, current):
    bar = progress_bar(total, "text", stateful_metrics=["texts/s"])
    if current:
        bar.update(current)
    return bar
