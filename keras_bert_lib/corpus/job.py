"""`keras-bert predict` / `keras-bert embed`: a model over a corpus, streamed, in resumable shards."""

import errno
import logging
import os
import shutil
import time

from keras_bert_lib.corpus.inputs import BadValue, check_columns, count_rows, input_files, read_chunks
from keras_bert_lib.corpus.models import DTYPES, load_corpus_model, model_source, predict_rows
from keras_bert_lib.corpus.outputs import ShardedOutput, finished, output_format, remove
from keras_bert_lib.file_checks import check_writable_folder, fingerprint
from keras_bert_lib.output_lock import output_lock
from keras_bert_lib.progress import progress_bar
from keras_bert_lib.training.callbacks import KeepInterrupts

logger = logging.getLogger(__name__)


def run_corpus_job(model, inputs, output, command="predict", text_column=None, text_pair_column=None,
                   id_column=None, batch_size=32, shard_size=10000, overwrite=False, progress=True, dtype="auto"):
    """Runs `model` over every row of `inputs` and writes one output row per input row, in input
    order, to `output`; returns {"rows", "errors", "seconds", "texts_per_second", "output",
    "skipped"}.

    Streams: one shard of `shard_size` rows is in memory at a time, predicted by length (the
    model's own `predict`, or similar lengths together for a SavedModel) and written whole
    (`corpus.outputs`). Killed, the same call continues after the last finished shard. The output
    records the job that made it (the model's and the inputs' bytes, the settings): the same job
    again finds it finished (`skipped`); another job, or a file that no job wrote, is refused
    with a ValueError unless `overwrite`. One job writes an output at a time (a lock beside it,
    `OUTPUT.lock`). A row whose text is null, missing or not UTF-8 gets an `error` field instead
    of a result. Every error about the output, the files, the columns or the model comes before
    any work; the output's before the model loads.

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
        dtype: what a Keras model computes in: "auto", "float32" or "bfloat16" (`load_corpus_model`).
    Raises:
        ValueError: a bad file, column, model or output (before any work); a full disk or an
            output folder that cannot be written (naming the file; the finished shards are kept).
        KeyboardInterrupt: Ctrl-C, saying how many shards are kept.
    Example:
        ```python
        from keras_bert_lib.corpus import run_corpus_job
        # run_corpus_job("runs/classify", ["tickets.csv"], "labels.jsonl")
        ```
    """
    files = input_files(inputs)
    output_format(output, embeds=command == "embed")  # the extension, before the model loads
    if dtype not in DTYPES:
        raise ValueError(f"--dtype {dtype}: one of {', '.join(DTYPES)}.")
    check_writable_folder(os.path.dirname(os.path.abspath(output)), "--output")
    with output_lock(output + ".lock", output, "--output"):
        _, source = model_source(model, command)
        job = {"command": command, "model": fingerprint(source), "inputs": [fingerprint(f) for f in files],
               "text_column": text_column, "text_pair_column": text_pair_column, "id_column": id_column,
               "dtype": dtype}
        if overwrite:
            remove(output)
        elif finished(output, job):  # or a ValueError: another job's output, or a file no job wrote
            shutil.rmtree(output + ".parts", ignore_errors=True)  # a kill after the join, before the parts went
            logger.warning("%s is finished: the same job wrote it (--overwrite writes it again).", output)
            return {"rows": None, "errors": None, "seconds": 0.0, "texts_per_second": None, "output": output,
                    "skipped": True}
        loaded = load_corpus_model(model, command, batch_size, dtype)  # embed: a model that embeds, or a ValueError
        logger.info("%s %s: %s.", "Embedding with" if command == "embed" else "Predicting with", loaded.name,
                    loaded.precision)
        return _run(loaded, files, output, job, text_column, text_pair_column, id_column, shard_size, progress)


def _run(loaded, files, output, job, text_column, text_pair_column, id_column, shard_size, progress):
    names = dict(zip(loaded.roles, (text_column, text_pair_column)))
    columns = {role: names.get(role) or role for role in loaded.roles}
    required = [columns[r] for r in loaded.roles if r not in loaded.optional]
    present = check_columns(files, required + ([id_column] if id_column else []),
                            optional=[columns[r] for r in loaded.optional])
    roles = [r for r in loaded.roles if r not in loaded.optional or columns[r] in present]
    fields = ["row"] + (["id"] if id_column else []) + loaded.fields + ["error"]
    out = ShardedOutput(output, job, fields, shard_size)
    total = count_rows(files)
    shards = -(-total // shard_size)
    to_do = set(out.to_do(shards))
    if len(to_do) < shards:
        logger.warning("Resuming: %d of %d shards are done (%s).", shards - len(to_do), shards, out.parts)
    bar = _bar(total, (shards - len(to_do)) * shard_size) if progress else None
    wanted = [columns[r] for r in roles] + ([id_column] if id_column else [])
    start, seen, errors = time.perf_counter(), 0, 0
    try:
        first = min(to_do, default=shards)
        with KeepInterrupts(at_once=True) as keep:  # a Ctrl-C stops here, or at the shard's end if swallowed
            for index, chunk in enumerate(read_chunks(files, wanted, shard_size, skip=first * shard_size),
                                          start=first):
                if index not in to_do:
                    continue
                rows = _predict_chunk(loaded, roles, columns, id_column, chunk)
                errors += sum("error" in r for r in rows)
                out.write(index, rows)
                seen += len(chunk)
                if bar:
                    bar.update(min((shards - len(to_do)) * shard_size + seen, total),
                               [("texts/s", seen / max(time.perf_counter() - start, 1e-9))])
                keep.check()
        out.finish(total)
    except OSError as e:  # a full disk, a folder that went away: the finished shards stay
        where = f" writing {e.filename}" if e.filename else ""
        fix = "free some space" if e.errno == errno.ENOSPC else "mend that"
        raise ValueError(f"{e.strerror or e}{where}: {fix} and run the same command again; the finished shards in "
                         f"{out.parts} are kept.") from None
    except KeyboardInterrupt:
        kept = shards - len(out.to_do(shards))
        raise KeyboardInterrupt(f"Interrupted: {kept} of {shards} shards are finished in {out.parts}; run the same "
                                "command again to continue.") from None
    seconds = time.perf_counter() - start
    if errors:
        logger.warning("%d rows had no text to read (null, missing or not UTF-8): their output rows hold an "
                       "`error` instead of a result.", errors)
    return {"rows": total, "errors": errors, "seconds": seconds, "texts_per_second": seen / max(seconds, 1e-9),
            "output": output, "skipped": False}


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
