"""export_saved_model: TF Serving's layout, both signatures with their names and dtypes, every task
model served in a process that imports only tensorflow and tensorflow_text and equal to Keras,
each weight stored once, and defined answers to bad requests."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import CrossEncoder, SentenceEmbedder, SpanQuestionAnswerer, TextClassifier, TokenClassifier
from keras_bert_lib.export import export_saved_model
from keras_bert_lib.export.signatures import ServingModule, task_outputs
from tests import harness
from tests.tasks.test_task_models import _preprocessor, _tiny

TEXTS = ["good film", "what is a bot ?", "Café PLOT\tbad ."]
SECONDS = ["good acting", "film", "a bot ."]


def _models():
    return {
        "classifier": (TextClassifier(_tiny(), 3, preprocessor=_preprocessor(), class_names=["a", "b", "c"]), False),
        "pair_classifier": (TextClassifier(_tiny(), 2, preprocessor=_preprocessor()), True),
        "cross_encoder": (CrossEncoder(_tiny(), preprocessor=_preprocessor()), True),
        "span_answerer": (SpanQuestionAnswerer(_tiny(), preprocessor=_preprocessor(16)), True),
        "token_classifier": (TokenClassifier(_tiny(), ["O", "B-X", "I-X"], preprocessor=_preprocessor()), False),
        "encoder": (_tiny(), False),
    }


OUTPUTS = {"classifier": ["label", "probabilities"], "pair_classifier": ["label", "probabilities"],
"cross_encoder": ["score"],
           "span_answerer": ["end_logits", "start_logits"], "token_classifier": ["logits", "tag_ids"],
           "encoder": ["pooled_output", "sequence_output"]}


@pytest.mark.slow
def test_every_task_model_serves_strings_and_ids_in_a_process_without_the_library(tmp_path, caplog):
    expected = {}
    for name, (model, pair) in _models().items():
        preprocessor = getattr(model, "preprocessor", None) or _preprocessor()
        with caplog.at_level("INFO"):
            path = export_saved_model(model, tmp_path / name, preprocessor=preprocessor, pair=pair)
        assert path == str(tmp_path / name / "1")
        # TensorFlow's notes on the tokenizer's captured inputs (renamed) and assets (written) stay quiet
        assert not [r.getMessage()[:80] for r in caplog.records if r.name in ("tensorflow", "absl")], name
        texts = (TEXTS, SECONDS) if pair else TEXTS
        ids = {k: v.numpy() for k, v in preprocessor(tuple(texts) if pair else texts).items()}
        expected[name] = {k: np.asarray(v) for k, v in task_outputs(model, ids).items()}
        assert sorted(expected[name]) == OUTPUTS[name]
        np.savez(tmp_path / f"{name}_ids.npz", **ids)
    (tmp_path / "pairs.json").write_text(json.dumps({n: p for n, (_, p) in _models().items()}))
    harness._run_fresh(f"""
        import json, sys, numpy as np, tensorflow as tf, tensorflow_text  # tensorflow_text registers the ops
        folder = {str(tmp_path)!r}
        for name, pair in json.load(open(folder + "/pairs.json")).items():
            served = tf.saved_model.load(f"{{folder}}/{{name}}/1")
            texts = {{"text": tf.constant({TEXTS!r})}}
            if pair:
                texts["text_pair"] = tf.constant({SECONDS!r})
            by_text = served.signatures["serving_default"](**texts)
            ids = {{k: tf.constant(v) for k, v in np.load(f"{{folder}}/{{name}}_ids.npz").items()}}
            by_ids = served.signatures["serving_ids"](**ids)
            plain = lambda out: {{k: v.numpy().astype(str) if v.dtype == tf.string else v.numpy()
                                  for k, v in out.items()}}
            np.savez(f"{{folder}}/{{name}}_text.npz", **plain(by_text))
            np.savez(f"{{folder}}/{{name}}_served_ids.npz", **plain(by_ids))
        assert not any(m.startswith(("keras_bert_lib", "tests")) for m in sys.modules), "imported the library"
    """)
    for name, want in expected.items():
        for kind in ("text", "served_ids"):
            got = dict(np.load(tmp_path / f"{name}_{kind}.npz"))
            if name == "classifier":  # built with class names: they come back as the label's name
                assert list(got.pop("class_name")) == [["a", "b", "c"][i] for i in got["label"]]
            assert sorted(got) == OUTPUTS[name], (name, kind)
            for k in want:
                np.testing.assert_allclose(got[k], want[k], atol=1e-5, rtol=0, err_msg=f"{name} {kind} {k}")


@pytest.mark.slow
def test_a_regression_serves_one_score_and_an_embedder_its_embeddings_per_row():
    model = TextClassifier(_tiny(), 1, preprocessor=_preprocessor())
    model.inference_dtype = None  # the export is float32: compare with float32
    ids = {k: v.numpy() for k, v in model.preprocessor(TEXTS).items()}
    out = task_outputs(model, ids)
    assert list(out) == ["score"]
    np.testing.assert_allclose(out["score"].numpy(), model.predict(ids, verbose=0)[:, 0], atol=1e-6)
    embedder = SentenceEmbedder(_tiny(), preprocessor=_preprocessor())
    embedder.inference_dtype = None
    out = task_outputs(embedder, ids)
    assert list(out) == ["embeddings"]
    np.testing.assert_allclose(out["embeddings"].numpy(), embedder.predict(ids, verbose=0), atol=1e-6)


@pytest.mark.slow
def test_saving_traces_each_signature_once(tmp_path):
    """export_saved_model's save: a concrete function traced before `tf.saved_model.save` would be
    traced again inside it (TensorFlow keys a trace by the save context), the model twice."""
    module = ServingModule(TextClassifier(_tiny(), 2, preprocessor=_preprocessor()))
    tf.saved_model.save(module, str(tmp_path), signatures={**module.signatures(), **module.token_count_signature()})
    assert [f.experimental_get_tracing_count() for f in (module.ids, module.text, module.token_counts)] == [1, 1, 1]


@pytest.mark.slow
def test_saved_model_cli_lists_both_signatures_with_their_names_and_dtypes(tmp_path):
    model = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    path = export_saved_model(model, tmp_path, version=3)
    shown = subprocess.run([os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), "show", "--dir", path,
                            "--all"], capture_output=True, text=True, timeout=300).stdout
    default = shown[shown.index("signature_def['serving_default']"):shown.index("signature_def['serving_ids']")]
    ids = shown[shown.index("signature_def['serving_ids']"):]
    assert "inputs['text'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in default
    assert "outputs['probabilities'] tensor_info:\n        dtype: DT_FLOAT\n        shape: (-1, 2)" in default
    assert "outputs['label'] tensor_info:\n        dtype: DT_INT32" in default
    for name in ("token_ids", "segment_ids", "padding_mask"):
        assert f"inputs['{name}'] tensor_info:\n        dtype: DT_INT32\n        shape: (-1, -1)" in ids
    assert os.listdir(os.path.join(path, "assets")) == ["vocab.txt"]


@pytest.mark.slow
def test_each_weight_is_stored_once(tmp_path):
    from keras_bert_lib import bert_mini

    model = TextClassifier(bert_mini(), 2)
    path = export_saved_model(model, tmp_path)
    stored = sum(
        os.path.getsize(os.path.join(path, "variables", f))
        for f in os.listdir(os.path.join(path, "variables"))
        if f.startswith("variables.data")
    )
    weights = sum(np.prod(w.shape) * 4 for w in model.weights)
    assert stored <= 1.05 * weights, stored / weights  # Keras' model.export: 2.0


@pytest.mark.slow
def test_bad_requests_get_defined_answers(tmp_path):
    model = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    served = tf.saved_model.load(export_saved_model(model, tmp_path)).signatures["serving_default"]
    # Invalid UTF-8: the broken byte is dropped (as U+FFFD, which BERT's normaliser removes).
    broken = served(text=tf.constant([b"good \xff\xfefilm", b"good film"]))["probabilities"].numpy()
    np.testing.assert_allclose(broken[0], broken[1], atol=1e-6)
    empty_batch = served(text=tf.constant([], tf.string))
    assert empty_batch["probabilities"].shape == (0, 2) and empty_batch["label"].shape == (0,)
    empty_text = served(text=tf.constant([""]))["probabilities"].numpy()
    np.testing.assert_allclose(empty_text, tf.nn.softmax(model.predict([""], verbose=0)).numpy(), atol=1e-5)
    # Longer than the sequence length: truncated, as the Keras model does.
    long = ["good film " * 2000]
    np.testing.assert_allclose(served(text=tf.constant(long))["probabilities"].numpy(),
                               tf.nn.softmax(model.predict(long, verbose=0)).numpy(), atol=1e-5)


@pytest.mark.slow
def test_an_existing_version_is_never_overwritten_and_a_failed_export_leaves_nothing(tmp_path):
    model = TextClassifier(_tiny(), 2, preprocessor=_preprocessor())
    export_saved_model(model, tmp_path)
    before = sorted(os.listdir(tmp_path / "1"))
    with pytest.raises(FileExistsError, match="export version=2"):
        export_saved_model(model, tmp_path)
    assert sorted(os.listdir(tmp_path / "1")) == before
    with pytest.raises(ValueError, match="not BertPretrainer"):
        from keras_bert_lib import BertPretrainer

        export_saved_model(BertPretrainer(_tiny()), tmp_path, version=2)
    assert sorted(os.listdir(tmp_path)) == ["1"]


@pytest.mark.slow
def test_raw_strings_are_padded_to_the_requests_longest(tmp_path):
    """A request of short texts runs at 8 columns, one of long texts at sequence_length (the
    per-token logits show the width the served model computed); real tokens' logits are Keras'."""
    model = TokenClassifier(_tiny(), ["O", "B-X", "I-X"], preprocessor=_preprocessor(128))
    model.inference_dtype = None  # the export is float32: compare with float32
    served = tf.saved_model.load(export_saved_model(model, tmp_path / "tagger")).signatures["serving_default"]
    short = served(text=tf.constant(["good film"] * 8))["logits"].numpy()
    long = served(text=tf.constant(["good film " * 80] * 8))["logits"].numpy()
    assert short.shape[1] == 8 and long.shape[1] == 128
    want = model.predict(["good film"] * 8, verbose=0)
    np.testing.assert_allclose(short[:, :4], want[:, :4], atol=1e-5)  # [CLS] good film [SEP]


@pytest.mark.slow
def test_auto_picks_bfloat16_weights_only_where_the_cpu_has_bfloat16_instructions():
    from keras_bert_lib import bert_mini, bert_tiny
    from keras_bert_lib.export.export_all import saved_model_dtype

    wide, narrow = bert_mini(), bert_tiny()  # 256 and 128 wide
    assert saved_model_dtype("auto", wide, flags={"avx2"}, accelerators=[]) == (
        "float32", "--dtype auto: this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)")
    assert saved_model_dtype("auto", wide, flags={"avx512_bf16"}, accelerators=[])[0] == "bfloat16"
    assert saved_model_dtype("auto", wide, flags={"amx_bf16"}, accelerators=[])[0] == "bfloat16"
    assert saved_model_dtype("auto", narrow, flags={"avx512_bf16"}, accelerators=[]) == (
        "float32", "--dtype auto: the model is narrower than bfloat16 pays for on AVX512-BF16")
    assert saved_model_dtype("bfloat16", narrow, flags={"avx2"}, accelerators=[])[0] == "bfloat16"
    with pytest.raises(ValueError, match="one of"):
        saved_model_dtype("float16", wide)


@pytest.mark.slow
def test_a_bfloat16_savedmodel_stores_bfloat16_weights_answers_float32_and_keeps_cosine_0_999(tmp_path):
    from keras_bert_lib.export import export_all, parity_report
    from keras_bert_lib.export.signatures import check_batch

    model = TextClassifier(_tiny(), 3, preprocessor=_preprocessor())
    exported = export_all(model, str(tmp_path), formats=["saved_model"], dtype="bfloat16")
    stored = tf.train.load_checkpoint(os.path.join(exported["saved_model bfloat16"], "variables", "variables"))
    dtypes = [d for name, d in stored.get_variable_to_dtype_map().items() if "OBJECT_GRAPH" not in name]
    # The encoder's kernels and embeddings stored once in bfloat16; the head and layer norms float32.
    assert dtypes.count(tf.bfloat16) > dtypes.count(tf.float32) > 0
    loaded = tf.saved_model.load(exported["saved_model bfloat16"])
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    assert served["probabilities"].dtype == tf.float32
    rows = parity_report(model, exported, check_batch(model, batch=8, length=12))
    saved = next(r for r in rows if r["artefact"] == "saved_model bfloat16")
    assert saved["cosine"] >= 0.999 and saved["agreement"] >= 0.875, rows
