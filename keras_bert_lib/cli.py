"""`keras-bert`: the command line over keras_bert_lib. It parses flags and calls the library.

    keras-bert quickstart [--output-dir DIR] [--train FILE --validation FILE] ...
    keras-bert summary bert_base [--batch 1] [--length 128] [--dtype float32]
    keras-bert pretrain [--corpus FILE ...] [--steps N] ...
    keras-bert finetune TASK --checkpoint DIR --train FILE --validation FILE ...   (TASK: keras_bert_lib.finetuning)
    keras-bert distill --teacher RUN_DIR --train FILE --validation FILE ...
    keras-bert export MODEL --format saved_model|tflite|onnx|openvino [--output PATH] ...
    keras-bert predict MODEL INPUT [INPUT ...] --output OUT [--text-column NAME] ...
    keras-bert embed MODEL INPUT [INPUT ...] --output OUT [--text-column NAME] ...
    keras-bert attention CHECKPOINT TEXT [--pair TEXT] [--output DIR]

The console script enters through `keras_bert_cli.main`, which answers `--help` before TensorFlow
loads. This module is the command line, so it writes to standard output.
"""

import dataclasses
import functools
import gc
import json
import logging
import sys

from keras_bert_commands import add_config_flags, build_parser, non_negative, port_number, positive
from keras_bert_lib.checkpoints.hub import hub_id, is_checkpoint_name, resolve_checkpoint
from keras_bert_lib.config import PRESETS
from keras_bert_lib.corpus import run_corpus_job
from keras_bert_lib.export import FORMATS, export_all, format_report, load_model_file, parity_report
from keras_bert_lib.export.export_all import check_export_target
from keras_bert_lib.export.signatures import check_batch
from keras_bert_lib.finetuning import TASKS, task_of_run
from keras_bert_lib.models import load_checkpoint
from keras_bert_lib.models.summary import summarize
from keras_bert_lib.runs import (
    DistillConfig,
    PretrainConfig,
    QuickstartConfig,
    run_distillation,
    run_finetuning,
    run_pretraining,
    run_quickstart,
)
from keras_bert_lib.runs.recipes import load_recipe
from keras_bert_lib.text import load_preprocessor
from keras_bert_lib.viz import attention_html, attention_maps, plot_attention


def main(argv=None) -> int:
    """Runs one `keras-bert` command; returns its exit code.

    Example:
        ```python
        from keras_bert_lib.cli import main
        main(["summary", "bert_tiny", "--length", "16", "--repeats", "1"])
        ```
    """
    parser, commands = build_parser()
    summary = commands["summary"]
    summary.add_argument("preset", choices=sorted(PRESETS), help="the encoder to build")
    summary.add_argument("--batch", type=positive, default=1, help="sequences per timed forward pass (default: 1)")
    summary.add_argument("--length", type=positive, default=128, help="tokens per sequence (default: 128)")
    summary.add_argument("--dtype", default="float32", choices=["float32", "mixed_float16", "mixed_bfloat16"],
                         help="Keras dtype policy (default: float32)")
    summary.add_argument("--repeats", type=positive, default=5, help="timed passes; the median is shown (default: 5)")
    download = commands["download"]
    download.add_argument("name", help="a HuggingFace Hub id, ORG/NAME (hf://ORG/NAME and ORG/NAME@REVISION too), "
                                       "a Google checkpoint name (uncased_L-12_H-768_A-12), an archive URL, or a "
                                       "keras-hub preset (bert_base_en_uncased, kaggle://keras/bert/keras/NAME/VERSION)")
    download.add_argument("--revision", default=None,
                          help="a branch, tag or commit to pin (default: the repository's main branch)")
    add_config_flags(commands["quickstart"], QuickstartConfig)
    add_config_flags(commands["pretrain"], PretrainConfig)
    tasks = commands["finetune"].add_subparsers(dest="task", required=True, metavar="TASK",
                                                title="tasks (keras-bert finetune TASK --help: its flags)")
    for task in TASKS.values():
        add_config_flags(tasks.add_parser(task.name, help=task.description, description=_task_help(task)),
                         task.config_class, skip=("task",))
    add_config_flags(commands["distill"], DistillConfig)
    export = commands["export"]
    export.add_argument("model", help="a .keras file, or a run folder holding model.keras")
    export.add_argument("--format", required=True, action="append", choices=list(FORMATS),
                        help="what to write; repeat the flag for several (required)")
    export.add_argument("--output", default="exported", help="folder for the artefacts: <output>/saved_model/"
                                                             "<version>/, <output>/model.tflite, <output>/model.onnx, "
                                                             "<output>/openvino/model.xml (default: exported)")
    export.add_argument("--version", type=positive, default=1, help="the SavedModel's TF Serving version (default: 1)")
    export.add_argument("--pair", action="store_true",
                        help="two string inputs, text and text_pair, for a classifier of pairs (default: what the "
                             "run's task serves: two for pair_classify, rerank, squad, similarity; else one)")
    export.add_argument("--quantize", choices=["none", "float16", "dynamic_int8"], action="append",
                        help="weights in int8 (ONNX Runtime's or TFLite's dynamic-range quantization) or, for "
                             "TFLite, float16; repeat the flag for several files (default: none)")
    export.add_argument("--no-text", dest="text", action="store_false",
                        help="TFLite: the ids signature only, no tokenizer in the file (default: with the model's "
                             "preprocessor, the file also takes raw strings, through tensorflow-text's TFLite kernels)")
    export.add_argument("--no-optimize", dest="optimize", action="store_false",
                        help="ONNX: skip ONNX Runtime's transformer optimiser, which fuses attention, GELU and "
                             "LayerNorm (default: optimise)")
    export.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "int8"], default="auto",
                        help="the SavedModel's weights: bfloat16 stores them once in bfloat16 (float32 outputs; "
                             "faster on CPUs with AVX512-BF16 or AMX, emulated and slower elsewhere); auto picks "
                             "bfloat16 where the CPU has those instructions; int8 writes --format openvino alone, "
                             "as NNCF's int8 model, calibrated on --calibration (default: auto)")
    export.add_argument("--calibration", metavar="FILE",
                        help="--dtype int8: calibration texts, one per line, up to 300 used (default: none, and "
                             "activations are quantized per call, dynamically)")
    export.add_argument("--length", type=positive, default=128,
                        help="tokens per row of the parity batch (default: 128)")
    for name in ("predict", "embed"):
        _corpus_flags(commands[name], name)
    _serve_flags(commands["serve"])
    attention = commands["attention"]
    attention.add_argument("checkpoint", help="a checkpoint folder that load_checkpoint and load_preprocessor read")
    attention.add_argument("text", help="the text (sentence A)")
    attention.add_argument("--pair", help="sentence B of a pair (default: none)")
    attention.add_argument("--layer", type=int, default=-1,
                           help="the layer the PNG shows; negative counts from the top (default: -1, the last)")
    attention.add_argument("--heads", type=int, nargs="+", metavar="HEAD",
                           help="the heads the PNG shows (default: all)")
    attention.add_argument("--output", default="attention",
                           help="folder for attention.png and attention.html (default: attention)")
    attention.add_argument("--sequence-length", type=positive, default=128,
                           help="tokens the model reads; a longer text is cut (default: 128)")
    args = parser.parse_args(argv)
    return {"summary": _summary, "download": _download, "quickstart": _quickstart, "pretrain": _pretrain,
            "finetune": _finetune, "distill": _distill, "export": _export, "attention": _attention,
            "predict": _corpus, "embed": _corpus, "serve": _serve}[args.command](args)


def _summary(args):
    try:
        print(summarize(args.preset, args.batch, args.length, args.dtype, args.repeats))
    except ValueError as e:  # a length the preset cannot take
        print(e, file=sys.stderr)
        return 2
    return 0


def _download(args):
    name = args.name + (f"@{args.revision}" if args.revision else "")
    if args.revision and hub_id(name) is None:
        print(f"--revision is for HuggingFace Hub ids (ORG/NAME), and {args.name} is not one (a Kaggle handle "
              "names its version as its last part).", file=sys.stderr)
        return 2
    if not is_checkpoint_name(name):
        print(f"{name} is not a HuggingFace Hub id (ORG/NAME[@REVISION]), a Google checkpoint name, an archive "
              "URL or a keras-hub preset, or it is a local path, which needs no download.", file=sys.stderr)
        return 2
    try:
        print(resolve_checkpoint(name))
    except (ValueError, ImportError) as e:
        print(e, file=sys.stderr)
        return 2
    return 0


def _quickstart(args):
    config, report = _run(args, QuickstartConfig, functools.partial(run_quickstart, log=print), "quickstart")
    if config is None:
        return report
    print(f"\nheld-out accuracy {report['held_out']['accuracy']:.3f} on {report['validation_examples']} texts; the "
          f"majority class {report['baselines']['majority class']:.3f}")
    print(f"\nevery artefact on the {report['validation_examples']} held-out texts (latency: 8 of them at a time):")
    print(format_report(report["exports"]))
    print('("text" rows: the artefact\'s own tokenizer on the raw texts; the others take the Keras preprocessor\'s '
          "ids.)")
    model = f"{config.output_dir}/model.keras"
    print(f"\nmodel: {model}   artefacts: {config.output_dir}/exported/   report: {config.output_dir}/report.json\n"
          f"next: import keras, keras_bert_lib; model = keras.models.load_model({model!r}); "
          "model.predict_labels([...]) on your own texts (README, 'Next: use the model').")
    return 0


def _pretrain(args):
    config, report = _run(args, PretrainConfig, run_pretraining, "pretrain")
    if config is None:
        return report
    held, base = report["held_out"], report["baselines"]
    print(f"\nheld-out ({report['eval_instances']} instances after {report['steps']} steps):")
    if config.objective == "rtd":
        print(f"  replaced-token detection: AUC {held['replaced_auc']:.3f} (chance 0.5), accuracy "
              f"{held['rtd_accuracy']:.3f}; of its 'replaced' calls {held['replaced_precision']:.3f} right "
              f"(tokens replaced: {held['replaced_rate']:.3f}), recall {held['replaced_recall']:.3f}")
        print(f"  generator MLM accuracy {held['mlm_accuracy']:.3f}  (most-frequent-token baseline "
              f"{base['mlm_most_frequent_token']:.3f})")
        print(f"curves: {config.output_dir}/curves.png   report: {config.output_dir}/report.json")
        return 0
    # Keras names a one-output model's metrics without the output's name (masked LM alone)
    mlm = {name: held.get(f"mlm_logits_{name}", held.get(name)) for name in ("accuracy", "perplexity")}
    ratio = mlm["accuracy"] / max(base["mlm_most_frequent_token"], 1e-9)
    print(f"  MLM accuracy {mlm['accuracy']:.3f}  (most-frequent-token baseline "
          f"{base['mlm_most_frequent_token']:.3f}, x{ratio:.1f})")
    if "nsp_logits_accuracy" in held:
        print(f"  {config.sentence_task.upper()} accuracy {held['nsp_logits_accuracy']:.3f}  "
              f"(always-IsNext baseline {base['nsp_always_is_next']:.3f})")
    print(f"  MLM perplexity {mlm['perplexity']:.1f}")
    print(f"curves: {config.output_dir}/curves.png   report: {config.output_dir}/report.json")
    return 0


def _task_help(task):
    return (f"{task.description[0].upper()}{task.description[1:]}. Reads {task.reads}. Held-out metrics: "
            f"{', '.join(task.metrics)}. The export serves {' and '.join(task.serves.inputs)} (strings) and gives "
            f"{', '.join(task.serves.outputs)}. Writes model.keras (raw strings in), report.json and curves.png; "
            "killed, the same command resumes.")


def _finetune(args):
    config, report = _run(args, TASKS[args.task].config_class, run_finetuning, "finetune")
    if config is None:
        return report
    print(f"\nheld-out ({report['validation_examples']} examples after {report['steps']} steps):")
    for name, value in report["held_out"].items():
        print(f"  {name} {_number(value)}")
    for name, value in report["baselines"].items():
        print(f"  baseline, {name}: {_number(value)}")
    print(f"model: {config.output_dir}/model.keras   curves: {config.output_dir}/curves.png   "
          f"report: {config.output_dir}/report.json")
    return 0


def _distill(args):
    config, report = _run(args, DistillConfig, run_distillation, "distill")
    if config is None:
        return report
    print(f"\nheld-out ({report['validation_examples']} examples after {report['steps']} steps), student "
          f"(layers {report['student_layers']} of {report['teacher_layers']}) against teacher:")
    for name, value in report["held_out"].items():
        print(f"  {name} {_number(value)}  (teacher {_number(report['teacher'][name])})")
    print(f"  student / teacher accuracy {report['student / teacher accuracy']:.3f}; parameters "
          f"{report['parameters']['student']:,} against {report['parameters']['teacher']:,}")
    print(f"model: {config.output_dir}/model.keras   report: {config.output_dir}/report.json")
    return 0


def read_lines(path, flag="--calibration"):
    """The non-empty lines of a text file (one text each), or None for no file; a ValueError
    where it holds none."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{flag} {path}: {getattr(e, 'strerror', None) or e}; give a UTF-8 text file, one text "
                         "per line.") from None
    if not lines:
        raise ValueError(f"{flag} {path} holds no texts; give one text per line.")
    return lines


def _export(args):
    quantize = [None if q == "none" else q for q in args.quantize or ["none"]]
    try:
        check_export_target(args.output, args.format, args.version)  # before the model loads
        model, path = load_model_file(args.model)
        task = task_of_run(path)  # a pair classifier's run serves two texts without --pair
        pair = args.pair or (task is not None and len(task.serves.inputs) == 2) or None
        exported = export_all(model, args.output, formats=args.format, quantize=quantize, version=args.version,
                              pair=pair, text=args.text, optimize=args.optimize, model_path=path,
                              log=print, dtype=args.dtype, calibration=read_lines(args.calibration))
    except (ValueError, FileExistsError, OSError, ImportError) as e:  # a bad path or setting; int8 without NNCF
        print(f"keras-bert export: {e}", file=sys.stderr)
        return 2
    print(format_report(parity_report(model, exported, check_batch(model, batch=8, length=args.length))))
    return 0


def _corpus_flags(parser, command):
    models = ("a fine-tuning run's folder (or its model.keras) or an exported SavedModel folder" if command == "predict"
              else "a checkpoint folder (Google TF1 or HuggingFace), an embed run's folder or its SavedModel")
    parser.add_argument("model", help=models)
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="files or globs: .txt (one text per line), .csv, .tsv, .jsonl, .parquet")
    parser.add_argument("--output", required=True,
                        help=".jsonl, .csv or .parquet" + (", or .npy (embeddings only)" if command == "embed" else "")
                        + "; shards go to OUTPUT.parts/ until the end, and OUTPUT.job.json records the job that wrote "
                          "it (required)")
    parser.add_argument("--text-column", help="the column of the (first) text (default: the task's name for it: text, "
                                              "or question for answer spans); a .txt file's lines are its text")
    parser.add_argument("--text-pair-column", help="the column of the second text of a pair (default: text_pair, or "
                                                   "context for answer spans; read where the files have it)")
    parser.add_argument("--id-column", help="a column copied to each output row as `id` (default: none; each row "
                                            "has `row`, its number from 0 across the inputs)")
    parser.add_argument("--batch-size", type=positive, default=32, help="texts per model call (default: 32)")
    parser.add_argument("--shard-size", type=positive, default=10000,
                        help="rows per output shard: the unit of memory and of resuming (default: 10000)")
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "int8"], default="auto",
                        help="what a Keras model computes in: auto is bfloat16 weights on CPUs with AVX512-BF16 or AMX "
                             "where they pay, float32 elsewhere; int8 quantizes weights and activations on OpenVINO, "
                             "calibrated on the first shard's texts (the openvino extra; docs/text.md says where it "
                             "pays); a SavedModel computes in what it was exported with (default: auto)")
    parser.add_argument("--overwrite", action="store_true",
                        help="start again, replacing the output (whatever wrote it) and dropping the shards of an "
                             "unfinished one (default: keep the same job's finished output, continue its "
                             "unfinished one, refuse another's)")


def _corpus(args):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        report = run_corpus_job(args.model, args.inputs, args.output, command=args.command,
                                text_column=args.text_column, text_pair_column=args.text_pair_column,
                                id_column=args.id_column, batch_size=args.batch_size, shard_size=args.shard_size,
                                overwrite=args.overwrite, dtype=args.dtype)
    except (ValueError, ImportError) as e:  # bad files, columns, model or output: before any work; a full disk
        print(f"keras-bert {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # one line: how many shards are kept, and that the same command continues
        print(f"\n{e or 'Interrupted before any shard was written; nothing is kept.'}", file=sys.stderr)
        return 130
    if report["skipped"]:
        return 0
    print(f"{report['rows']} rows -> {report['output']} in {report['seconds']:.1f} s "
          f"({report['texts_per_second']:.1f} texts/s); {report['errors']} rows with an error field")
    return 0


def _serve_flags(parser):
    parser.add_argument("models", nargs="*", metavar="[NAME=]MODEL",
                        help="an exported SavedModel folder, TF Serving's model folder of numbered versions (the "
                             "highest served) or a fine-tuning run's folder (served on its Keras model, the path "
                             "predict takes: see --dtype); NAME= names it in "
                             "the URLs (default: the folder's name, or its parent's for saved_model/ and versions)")
    parser.add_argument("--model-config-file", help="TF Serving's models.config: names, base paths, version policies "
                                                    "and labels (default: none)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on; 0.0.0.0 for every interface (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8501,
                        help="the HTTP port, TF Serving's REST port; 0 takes a free one, which the log names "
                             "(default: 8501)")
    parser.add_argument("--max-batch-size", type=positive, default=32,
                        help="texts per model call from requests that arrive together; 1 turns batching off "
                             "(default: 32)")
    parser.add_argument("--batch-timeout-micros", type=int, default=0,
                        help="how long a request that finds a model call free waits for others to fill its batch, "
                             "in microseconds; 0 takes what has queued, and batches form while calls run "
                             "(default: 0)")
    parser.add_argument("--max-batch-tokens", type=positive, default=16384,
                        help="tokens per model call: a batch closes at this many tokens of its texts, or at "
                             "--max-batch-size texts, whichever comes first, as TEI's flag does (default: 16384)")
    parser.add_argument("--batches-in-flight", type=positive, default=None,
                        help="model calls running at once, while the next batch forms; on OpenVINO, 1 runs each "
                             "call on every core (default: 1 for a run folder on OpenVINO, 2 on TensorFlow)")
    parser.add_argument("--pack-tokens", type=non_negative, default=64,
                        help="a run folder's model on OpenVINO (encoders with learned absolute positions) runs "
                             "each batch packed: its texts end to end in rows of this many tokens, each attending "
                             "to itself alone, so that short, uneven texts cost their tokens, not their padding; 0 "
                             "runs batches padded (default: 64)")
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "int8"], default="auto",
                        help="what a run folder's model computes in, on the path its predict takes: auto is bfloat16 "
                             "weights on CPUs with AVX512-BF16 or AMX where they pay, float32 elsewhere; int8 "
                             "quantizes on OpenVINO (the openvino extra), calibrated on --calibration; a SavedModel "
                             "computes in what it was exported with (default: auto)")
    parser.add_argument("--calibration", metavar="FILE",
                        help="int8's calibration texts, one per line: a sample of what the server will see, up to "
                             "300 used (default: none, and int8 quantizes activations per call, dynamically)")
    parser.add_argument("--runtime", choices=["auto", "openvino", "tensorflow"], default="auto",
                        help="what runs a run folder's model in --dtype: openvino (the openvino extra), tensorflow "
                             "(predict's own path), or auto: OpenVINO where it is installed, as a server's calls of "
                             "a few texts cost it far less; int8 always runs on OpenVINO (default: auto)")
    parser.add_argument("--max-instances", type=positive, default=1024,
                        help="texts one request may hold; more get a 400 (default: 1024)")
    parser.add_argument("--max-text-bytes", type=positive, default=65536,
                        help="UTF-8 bytes one text may hold; more get a 400 (default: 65536)")
    parser.add_argument("--max-body-bytes", type=positive, default=4 << 20,
                        help="bytes one request's body may hold; a larger one gets a 413 before it is read "
                             "(default: 4194304, 4 MiB)")
    parser.add_argument("--read-timeout", type=positive, default=30,
                        help="seconds a client has to send a whole request; a slower one gets a 408, or its "
                             "connection is closed (default: 30)")
    parser.add_argument("--idle-timeout", type=positive, default=65,
                        help="seconds a connection may sit idle between requests; longer than the 60 s of common "
                             "load balancers, so that they close first (default: 65)")
    parser.add_argument("--grace-period", type=positive, default=30,
                        help="seconds SIGTERM waits for the requests in flight (default: 30)")
    parser.add_argument("--access-log", action="store_true",
                        help="log every request (uvicorn's access log); it costs throughput under load (default: off)")


def _serve(args):
    try:
        from keras_bert_lib.serve import Limits, model_specs, serve
        from keras_bert_lib.serve.connections import listening_socket
    except ImportError as e:
        print(f'keras-bert serve: {e}; it needs the serve extra: pip install "keras-bert-lib[serve]"', file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("keras_bert_lib").setLevel(logging.INFO)  # a refused request: one INFO line each
    try:
        sock = listening_socket(args.host, args.port)  # the port first: loading the models takes a while
        specs = model_specs(args.models, args.model_config_file)
        calibration = read_lines(args.calibration)
        serve(specs, host=args.host, port=args.port, max_batch_size=args.max_batch_size,
              dtype=args.dtype, calibration=calibration, max_batch_tokens=args.max_batch_tokens,
              in_flight=args.batches_in_flight, runtime=args.runtime, pack_tokens=args.pack_tokens or None,
              batch_timeout_micros=args.batch_timeout_micros, grace_period=args.grace_period,
              limits=Limits(args.max_instances, args.max_text_bytes), access_log=args.access_log,
              max_body_bytes=args.max_body_bytes, read_timeout=args.read_timeout, idle_timeout=args.idle_timeout,
              sock=sock)
    except (ValueError, OSError, ImportError) as e:  # a bad model or setting, a --calibration file, int8 without NNCF
        print(f"keras-bert serve: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C while the models load; once serving, Ctrl-C drains and returns
        print("keras-bert serve: interrupted; stopped.", file=sys.stderr)
        return 130
    return 0


def _attention(args):
    try:  # a missing checkpoint, a layer or head the model lacks: named, no traceback
        encoder = load_checkpoint(args.checkpoint)
        maps = attention_maps(encoder, load_preprocessor(args.checkpoint, sequence_length=args.sequence_length),
                              args.text, args.pair)
        picture = plot_attention(maps, f"{args.output}/attention.png", layer=args.layer, heads=args.heads)
    except ValueError as e:
        print(f"keras-bert attention: {e}", file=sys.stderr)
        return 2
    page = attention_html(maps, f"{args.output}/attention.html", title=f"Attention: {args.text}")
    print(f"{len(maps.tokens)} tokens, {maps.num_layers} layers x {maps.num_heads} heads")
    print(f"heat maps: {picture}\nhead and model views: {page}")
    return 0


def _run(args, config_class, run, command):
    """(config, report) of a run from the flags and --config, or (None, exit code) on a bad setting."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        task = getattr(args, "task", None)
        values = load_recipe(args.recipe, command, config_class, task=task) if args.recipe else {}
        if args.config:
            with open(args.config, encoding="utf-8") as f:
                values.update(json.load(f))
        values.update({f.name: getattr(args, f.name) for f in dataclasses.fields(config_class)
                       if hasattr(args, f.name)})
        config = config_class(**values)
        print(f"{config_class.__name__}:", json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True))
        return config, run(config)
    except (ValueError, TypeError) as e:  # a bad setting or file, found before training
        print(f"keras-bert {command}: {e}", file=sys.stderr)
        return None, 2
    except FloatingPointError as e:
        print(f"stopped: {e}", file=sys.stderr)
        return None, 3
    except KeyboardInterrupt as e:  # one line: where the last backup is, and that the same command resumes
        print(f"\n{e or 'Interrupted before training began; run the same command again to start it.'}",
              file=sys.stderr)
        return None, 130


def _number(value):
    """0.841, or for a group of numbers 'f1 12.500, exact_match 10.000'."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    return f"{value:.3f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    gc.freeze()  # a process of its own, as keras_bert_cli's console command: see there
    sys.exit(main())
