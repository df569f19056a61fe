"""The SQuAD reader checks every answer against its context; the CoNLL/JSONL reader splits
sentences, skips -DOCSTART-, turns IOB1 into IOB2 and names a tag the training data lacks."""

import json
import logging

import pytest

from keras_bert_lib.data import read_squad, read_tagged


def _squad(tmp_path, qas, context="Paris is in France. Rome is in Italy."):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "2.0", "data": [{"title": "t", "paragraphs": [{"context": context,
                                                                                          "qas": qas}]}]}))
    return str(path)


def test_squad_v1_and_v2_questions_are_read_with_their_answers(tmp_path):
    path = _squad(tmp_path, [
        {"id": "a", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12},
                                                              {"text": "in France", "answer_start": 9}]},
        {"id": "b", "question": "Where is Oslo?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "Italy", "answer_start": 31}]}])
    first, second = read_squad(path)
    assert (first.id, first.answers, first.is_impossible) == ("a", [("France", 12), ("in France", 9)], False)
    assert first.context[12:18] == "France"
    assert (second.answers, second.is_impossible) == ([], True)


def test_an_answer_away_from_its_answer_start_is_named_or_skipped_and_counted(tmp_path, caplog):
    path = _squad(tmp_path, [
        {"id": "good", "question": "Where is Rome?", "answers": [{"text": "Italy", "answer_start": 31}]},
        {"id": "off", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 10}]}])
    with pytest.raises(ValueError, match=r"question 'off': the answer 'France' is not at character 10 of its "
                                         r"context, which holds 'n Fran' there; fix answer_start"):
        read_squad(path)
    with caplog.at_level(logging.WARNING):
        assert [e.id for e in read_squad(path, mismatched="skip")] == ["good"]
    assert "1 question(s) left out" in caplog.text
    (tmp_path / "bad.json").write_text('{"version": "1.1"}')
    with pytest.raises(ValueError, match="bad.json: not a SQuAD file"):
        read_squad(str(tmp_path / "bad.json"))


CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER
"""


def test_conll_sentences_are_split_at_blank_lines_and_read_as_iob2(tmp_path):
    path = tmp_path / "train.conll"
    path.write_text(CONLL)
    data = read_tagged(str(path))
    assert data.words == [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]]
    assert data.tags == [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER"]]
    assert data.lines == [3, 8]
    assert data.labels() == ["B-MISC", "B-ORG", "B-PER", "I-PER", "O"]
    assert read_tagged(str(path), tag_column=1).tags[1] == ["NNP", "NNP"]  # part of speech: kept as is


def test_jsonl_tags_and_the_errors_name_file_line_and_fix(tmp_path):
    good = tmp_path / "dev.jsonl"
    good.write_text(json.dumps({"tokens": ["Rome", "wins"], "tags": ["B-LOC", "O"]}) + "\n")
    assert read_tagged(str(good)).tags == [["B-LOC", "O"]]
    with pytest.raises(ValueError, match=r"dev.jsonl, sentence at line 1: tag 'B-LOC' is not among the 3 tags of "
                                         r"the training data \(B-PER, I-PER, O\)"):
        read_tagged(str(good), labels=["B-PER", "I-PER", "O"])
    uneven = tmp_path / "uneven.jsonl"
    uneven.write_text(json.dumps({"tokens": ["Rome"], "tags": ["B-LOC", "O"]}) + "\n")
    with pytest.raises(ValueError, match="uneven.jsonl, line 1: 1 tokens but 2 tags"):
        read_tagged(str(uneven))
    short = tmp_path / "short.conll"
    short.write_text("EU B-ORG\nrejects\n")
    with pytest.raises(ValueError, match="short.conll, line 2: 1 column"):
        read_tagged(str(short))
    (tmp_path / "empty.conll").write_text("-DOCSTART- O\n\n")
    with pytest.raises(ValueError, match="holds no sentences"):
        read_tagged(str(tmp_path / "empty.conll"))
