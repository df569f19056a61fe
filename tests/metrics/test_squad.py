"""SQuAD exact match and F1 equal torchmetrics' port of the official script on 250+ hand-made
cases (punctuation, articles, case, whitespace, several gold answers, missing ids) and on random
text; SQuAD v2.0's unanswerable questions score as the official v2.0 script does.

torchmetrics scores F1 with v2.0's rule for answers that normalise to nothing ("the", "!"): 1 when
both do. The v1.1 script, which `squad_scores` follows for answerable questions, gives 0 there
(its F1 is 0 whenever no token is shared); those cases are checked against that rule instead."""

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lib.metrics import normalize_answer, squad_scores

# One worker runs the module, so that one process pays torchmetrics' import, not both.
pytestmark = pytest.mark.xdist_group("torchmetrics")

GOLDS = [["Denver Broncos"], ["the Eiffel Tower", "Eiffel Tower"], ["1976"], ["Saint Bernadette Soubirous"],
         ["a copper statue of Christ"], ["March 1, 1815", "1 March 1815"], ["U.S."], ["New York City", "NYC"],
         ["an apple", "apples"], ["Beyoncé"], ["5 to 10 years"], ["rock-and-roll"], ["\"Crazy in Love\""],
         ["$1.5 million", "1.5 million dollars"], ["the the"], ["Zürich, Switzerland"], ["Theodore Roosevelt"],
         ["in the late 1990s"], ["O'Neill"], ["50%"], ["Gothic Revival"], ["Marie Curie", "Curie"],
         ["three", "3"], ["A. Einstein"], ["Tokyo – Japan"]]


def _variants(gold):
    """Predictions around a gold answer: exact, case, punctuation, articles, whitespace, partial,
    extended, reordered, wrong, empty."""
    words = gold.split()
    return [gold, gold.upper(), gold.lower() + ".", f"  {gold}  ", "The " + gold, gold.replace(" ", "   "),
            " ".join(words[:-1]) or "x", gold + " and more words", " ".join(reversed(words)), "completely wrong",
            "", "a an the", gold.replace(",", ""), f"({gold})"]


def _cases():
    cases = []
    for golds in GOLDS:
        for prediction in {p for g in golds for p in _variants(g)}:
            cases.append((prediction, golds))
    return cases


def _ours_and_theirs(cases, missing=()):
    data = [{"paragraphs": [{"context": "", "qas": [{"id": f"q{i}", "answers": [{"text": g} for g in golds]}
                                                   for i, (_, golds) in enumerate(cases)]}]}]
    predictions = {f"q{i}": p for i, (p, _) in enumerate(cases) if i not in missing}
    ours = squad_scores(data, predictions)
    from torchmetrics.functional.text import squad as torchmetrics_squad  # torchmetrics is in the [test] extra

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about each unanswered id
        theirs = torchmetrics_squad([{"id": k, "prediction_text": v} for k, v in predictions.items()],
                                    [{"id": f"q{i}", "answers": {"text": golds, "answer_start": [0] * len(golds)}}
                                     for i, (_, golds) in enumerate(cases)])
    return ours, {k: float(v) for k, v in theirs.items()}


def _check(case):
    ours, theirs = _ours_and_theirs([case])
    assert ours["exact_match"] == pytest.approx(theirs["exact_match"]), case
    prediction, golds = case
    if not normalize_answer(prediction) and any(not normalize_answer(g) for g in golds):
        assert ours["f1"] == 0.0, case  # v1.1: no shared token, F1 0 (torchmetrics: v2.0's 100)
    else:
        assert ours["f1"] == pytest.approx(theirs["f1"], abs=1e-4), case


def test_squad_scores_equal_the_official_v1_1_logic_case_by_case():
    cases = _cases()
    assert len(cases) >= 250
    for case in cases:  # one at a time, so a difference names its case
        _check(case)


def test_squad_scores_average_over_questions_and_count_missing_ones_as_zero():
    cases = [(p, golds) for p, golds in _cases() if normalize_answer(p) and all(normalize_answer(g) for g in golds)]
    missing = set(range(0, len(cases), 7))
    ours, theirs = _ours_and_theirs(cases, missing)
    assert ours["questions"] == len(cases) and ours["missing"] == len(missing)
    assert ours["exact_match"] == pytest.approx(theirs["exact_match"], abs=1e-4)
    assert ours["f1"] == pytest.approx(theirs["f1"], abs=1e-4)
    assert 0 < ours["f1"] < 100


text = st.lists(st.sampled_from(list("abc ABC.,!-'\"") + ["the ", "an ", "a ", "é", "–"]), max_size=20).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(text, st.lists(text, min_size=1, max_size=3))
def test_squad_scores_equal_the_official_logic_on_random_text(prediction, golds):
    _check((prediction, golds))


def test_unanswerable_questions_score_only_an_empty_prediction_as_v2_does():
    data = [{"paragraphs": [{"context": "Paris is in France.", "qas": [
        {"id": "none", "question": "Where is Rome?", "answers": [], "is_impossible": True},
        {"id": "paris", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]
    assert squad_scores(data, {"none": "", "paris": "France"})["exact_match"] == 100.0
    assert squad_scores(data, {"none": "France", "paris": ""}) == {"exact_match": 0.0, "f1": 0.0, "questions": 2,
                                                                    "missing": 0}
    assert squad_scores(data, {"none": "the", "paris": "in France"})["f1"] == pytest.approx(50 + 100 / 3)


def test_normalize_answer_keeps_what_the_official_script_keeps():
    assert normalize_answer("  The Eiffel-Tower, an ICON!  ") == "eiffeltower icon"
    assert normalize_answer("Zürich – “the city”") == "zürich – “ city”"  # only ASCII punctuation goes
    assert normalize_answer("theatre another") == "theatre another"  # articles only as whole words
    with pytest.raises(ValueError, match="no questions"):
        squad_scores([], {})
