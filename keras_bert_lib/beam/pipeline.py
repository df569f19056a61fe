"""The ready pipeline: `python -m keras_bert_lib.beam predict|embed --model M --input GLOB
--output PREFIX [Beam's pipeline options]`.

Files → rows numbered across the inputs (each file read by one worker, with our readers) →
reshuffled over the workers → `RunInference(BertModelHandler)` → JSON lines, sharded as Beam
writes them (`PREFIX-00000-of-00004.jsonl`, ...). Each row has its `row` number (and `id`), as
`keras-bert predict` writes it: sort by `row` for the input order.
"""

import argparse
import json
import logging
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from keras_bert_lib.beam.handler import BertModelHandler
from keras_bert_lib.corpus.inputs import READERS, count_rows, file_kind, file_rows
from keras_bert_lib.corpus.outputs import jsonable

logger = logging.getLogger(__name__)


def _open(path):
    return FileSystems.open(path, compression_type="uncompressed")


def matched_files(patterns):
    """The files that `patterns` match on any Beam file system (local, gs://, s3://), in order;
    a ValueError for a pattern that matches nothing or a kind we cannot read.

    Example:
        ```python
        from keras_bert_lib.beam.pipeline import matched_files
        # matched_files(["gs://bucket/tickets/*.jsonl"])
        ```
    """
    files = []
    for pattern in patterns:
        found = sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)
        if not found:
            raise ValueError(f"{pattern}: no such file.")
        bad = [f for f in found if file_kind(f) not in READERS]
        if bad:
            raise ValueError(f"{bad[0]}: not one of {', '.join(READERS)}.")
        files += found
    return files


class _ReadRows(beam.DoFn):
    """(path, first row number) → ((row number, id), {"text", "text_pair"}) for each row of the file."""

    def __init__(self, text_column, text_pair_column, id_column):
        self.columns = [c for c in (text_column, text_pair_column, id_column) if c]
        self.text_column, self.text_pair_column, self.id_column = text_column, text_pair_column, id_column

    def process(self, item):
        path, first = item
        with _open(path) as raw:
            for number, values in enumerate(file_rows(raw, file_kind(path), path, self.columns), start=first):
                element = {"text": values[self.text_column]}
                if self.text_pair_column:
                    element["text_pair"] = values[self.text_pair_column]
                key = (number, str(values[self.id_column]) if self.id_column else None)
                yield key, element


def _output_row(keyed):
    (number, row_id), result = keyed
    row = {"row": number}
    if row_id is not None:
        row["id"] = row_id
    row.update(result.inference)
    return json.dumps(row, ensure_ascii=False, default=jsonable)


def build(pipeline, model, files, output, command="predict", text_column="text", text_pair_column=None,
          id_column=None, max_batch_size=64):
    """Adds the job to `pipeline`: every row of `files` through `model`, JSON lines to `output`
    (a prefix: Beam writes `output-SSSSS-of-NNNNN.jsonl`).

    Example:
        ```python
        import apache_beam as beam
        from keras_bert_lib.beam.pipeline import build
        # with beam.Pipeline() as p:
        #     build(p, "runs/classify", ["tickets.csv"], "out/labels")
        ```
    """
    offsets, start = [], 0
    for path in files:  # row numbers run on across the files, as keras-bert predict numbers them
        offsets.append((path, start))
        start += count_rows([path], opener=_open)
    handler = KeyedModelHandler(BertModelHandler(model, command, max_batch_size=max_batch_size))
    return (pipeline
            | "Files" >> beam.Create(offsets)
            | "Rows" >> beam.ParDo(_ReadRows(text_column, text_pair_column, id_column))
            | "Spread" >> beam.Reshuffle()
            | "Model" >> RunInference(handler)
            | "Lines" >> beam.Map(_output_row)
            | "Write" >> beam.io.WriteToText(output, file_name_suffix=".jsonl"))


def main(argv=None):
    """`python -m keras_bert_lib.beam`: parses our flags, passes the rest to Beam as pipeline
    options, and runs. With no runner or `--runner DirectRunner` it runs on Beam's in-process
    FnApiRunner (`--direct_num_workers`, `--direct_running_mode` apply), never Prism, whose
    binary DirectRunner would first try to download.

    Example:
        ```python
        from keras_bert_lib.beam.pipeline import main
        # main(["embed", "--model", "minilm/", "--input", "texts.txt", "--output", "out/vectors"])
        ```
    """
    parser = argparse.ArgumentParser(prog="python -m keras_bert_lib.beam", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["predict", "embed"], help="predictions (labels, scores, entities, "
                                                                      "answers) or embeddings")
    parser.add_argument("--model", required=True, help="a fine-tuning run's folder, an exported SavedModel folder or "
                                                       "(embed) a checkpoint folder, readable by every worker")
    parser.add_argument("--input", required=True, action="append",
                        help="a file or glob of .txt, .csv, .tsv, .jsonl or .parquet (local, gs://, s3://); repeat "
                             "for more")
    parser.add_argument("--output", required=True, help="the output prefix: PREFIX-SSSSS-of-NNNNN.jsonl")
    parser.add_argument("--text-column", default="text", help="the column of the (first) text (default: text)")
    parser.add_argument("--text-pair-column", help="the column of the second text of a pair (default: none)")
    parser.add_argument("--id-column", help="a column copied to each output row as `id` (default: none)")
    parser.add_argument("--max-batch-size", type=int, default=64,
                        help="the largest batch Beam's BatchElements may form (default: 64)")
    args, beam_args = parser.parse_known_args(argv)
    options = PipelineOptions(beam_args)
    runner = options.view_as(StandardOptions).runner
    if runner in (None, "DirectRunner", "direct"):
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        runner = FnApiRunner()
    files = matched_files(args.input)
    start = time.perf_counter()
    with beam.Pipeline(runner=runner, options=options) as pipeline:
        build(pipeline, args.model, files, args.output, args.command, args.text_column, args.text_pair_column,
              args.id_column, args.max_batch_size)
    seconds = time.perf_counter() - start
    rows = count_rows(files, opener=_open)
    print(f"{rows} rows -> {args.output}-*.jsonl in {seconds:.1f} s ({rows / max(seconds, 1e-9):.1f} texts/s, "
          "model loading included)")
    return 0
