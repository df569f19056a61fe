"""Entity precision, recall and F1 equal seqeval's in its default and strict modes, on random tag
sequences and on the hand-made cases where the two modes and IOB1/IOB2 differ."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lib.metrics import entity_scores, tags_to_entities
from keras_bert_lib.metrics.entities import to_iob2

seqeval = pytest.importorskip("seqeval.metrics")
from seqeval.scheme import IOB2  # noqa: E402

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC-X", "I-MISC-X"]
sentence = st.lists(st.sampled_from(TAGS), min_size=1, max_size=12)


def _seqeval(y_true, y_pred, mode):
    kwargs = {"mode": "strict", "scheme": IOB2} if mode == "strict" else {}
    return {"precision": seqeval.precision_score(y_true, y_pred, zero_division=0, **kwargs),
            "recall": seqeval.recall_score(y_true, y_pred, zero_division=0, **kwargs),
            "f1": seqeval.f1_score(y_true, y_pred, zero_division=0, **kwargs)}


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.data(), st.sampled_from([None, "strict"]))
def test_entity_scores_equal_seqevals_on_random_tags(data, mode):
    y_true = data.draw(st.lists(sentence, min_size=1, max_size=4))
    y_pred = [data.draw(st.lists(st.sampled_from(TAGS), min_size=len(s), max_size=len(s))) for s in y_true]
    ours = entity_scores(y_true, y_pred, mode=mode)
    for key, value in _seqeval(y_true, y_pred, mode).items():
        assert ours[key] == pytest.approx(value), (key, y_true, y_pred, mode)


HAND_MADE = [
    (["B-PER", "I-PER", "O", "I-LOC"], ["B-PER", "I-PER", "O", "B-LOC"]),  # a stray I- opens an entity by default
    (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),  # IOB1 against IOB2
    (["B-PER", "I-LOC", "I-LOC"], ["B-PER", "B-LOC", "I-LOC"]),  # a type change inside
    (["B-PER", "B-PER", "O"], ["B-PER", "I-PER", "O"]),  # two adjacent entities against one
    (["O", "O"], ["B-LOC", "O"]),  # nothing to find, something predicted
    (["B-LOC", "O"], ["O", "O"]),  # something to find, nothing predicted
]


@pytest.mark.parametrize("mode", [None, "strict"])
@pytest.mark.parametrize("y_true, y_pred", HAND_MADE)
def test_entity_scores_equal_seqevals_where_the_modes_differ(y_true, y_pred, mode):
    ours = entity_scores([y_true], [y_pred], mode=mode)
    for key, value in _seqeval([y_true], [y_pred], mode).items():
        assert ours[key] == pytest.approx(value), key


def test_entities_iob1_to_iob2_and_per_type_scores():
    assert tags_to_entities(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5)]
    assert tags_to_entities(["I-PER", "B-PER", "I-LOC"], strict=True) == [("PER", 1, 2)]
    assert to_iob2(["I-PER", "I-PER", "O", "I-LOC", "I-PER"]) == ["B-PER", "I-PER", "O", "B-LOC", "B-PER"]
    scores = entity_scores([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
    assert scores["per_type"] == {"LOC": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
                                  "PER": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}}


def test_bad_tags_and_lengths_are_named():
    with pytest.raises(ValueError, match="'PER' is not an IOB tag"):
        entity_scores([["PER"]], [["O"]])
    with pytest.raises(ValueError, match="Sentence 0 has 2 gold tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="mode='lenient'"):
        entity_scores([["O"]], [["O"]], mode="lenient")
