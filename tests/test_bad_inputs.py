"""Every row of docs/errors.md's command-line and Python tables, run as a user would: each bad
input gets one line that names the problem and the fix, before anything is written or loaded.
The server's table is tests/serve/test_server.py's."""

import json
import os
import shutil

import numpy as np
import pytest

from keras_bert_lib import TextClassifier, bert_tiny, load_checkpoint, save_checkpoint
from keras_bert_lib.cli import main
from keras_bert_lib.corpus import run_corpus_job
from keras_bert_lib.corpus.outputs import ShardedOutput
from keras_bert_lib.training.loop import LoopConfig
from tests.bad_inputs import check_page, normalised, one_line
from tests.lock_holder import lock_held_elsewhere


@pytest.fixture()
def folder(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "one_document.txt").write_text("A first sentence.\nIts second.\n")
    (tmp_path / "corpus.txt").write_text("\n\n".join(f"Document {i}.\nIt goes on." for i in range(6)) + "\n")
    (tmp_path / "texts.txt").write_text("a fine film\n")
    (tmp_path / "a_file").write_text("")
    (tmp_path / "model.keras").write_bytes(b"not read: the output is refused first")
    (tmp_path / "mine.jsonl").write_text('{"row": 0}\n')
    done = ShardedOutput(str(tmp_path / "labels.jsonl"), {"model": "another"}, ["row"], shard_size=10)
    done.write(0, [{"row": 0}])
    done.finish(rows=1)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "history.csv").write_text("epoch,loss\n0,1.0\n")
    (tmp_path / "run" / "config.json").write_text('{"steps": 10')  # cut short by a crash
    return tmp_path


CLI = [  # (what, argv: DIR is the test's folder, the words the answer names)
    ("a port out of range", "serve exported/saved_model --port 70000", "70000 is not a port"),
    ("a negative port", "serve exported/saved_model --port -1", "-1 is not a port"),
    ("warm-up longer than the run", "pretrain --steps 100 --steps-per-epoch 10 --warmup-steps 500",
     "--warmup-steps 500 is longer than the run's 100 steps"),
    ("a dropout that is not a probability", "pretrain --dropout 1.5", "--dropout 1.5 is outside [0, 1)"),
    ("a negative learning rate", "pretrain --learning-rate -0.001", "--learning-rate -0.001 is outside (0, inf)"),
    ("no room for a pair of sentences", "pretrain --max-seq-length 2", "--max-seq-length 2 is outside [5, inf)"),
    ("a preset without a pooler, for NSP", "pretrain --preset electra_small",
     "--preset electra_small has no pooler, so it cannot learn NSP: pass --sentence-task none"),
    ("replaced-token detection with a sentence task", "pretrain --objective rtd",
     "--objective rtd learns from every token, without a sentence task: pass --sentence-task none"),
    ("replaced-token detection on ALBERT", "pretrain --objective rtd --sentence-task none --preset albert_base",
     "--objective rtd trains an ELECTRA discriminator of BERT's shape"),
    ("an empty corpus", "pretrain --corpus DIR/empty.txt", "holds 0 documents"),
    ("a corpus of one document", "pretrain --corpus DIR/one_document.txt", "holds 1 document"),
    ("a run folder another process writes", "pretrain --corpus DIR/corpus.txt --output-dir DIR/locked",
     "is being written by process"),
    ("a run's config.json cut short", "pretrain --corpus DIR/corpus.txt --output-dir DIR/run", "is not JSON"),
    ("fine-tuning dropout out of range",
     "finetune classify --checkpoint DIR --train DIR/t.csv --validation DIR/v.csv --dropout 1.5",
     "--dropout 1.5 is outside [0, 1)"),
    ("an output folder that cannot be written", "embed DIR/model.keras DIR/texts.txt --output DIR/a_file/vectors.npy",
     "cannot write in DIR/a_file"),
    ("an output no job wrote", "embed DIR/model.keras DIR/texts.txt --output DIR/mine.jsonl",
     "no keras-bert job recorded writing it"),
    ("an output another job wrote", "embed DIR/model.keras DIR/texts.txt --output DIR/labels.jsonl",
     "holds the output of another job"),
    ("an export into a folder that is a file",
     "export DIR/model.keras --format saved_model --output DIR/a_file/exported", "cannot write in DIR/a_file"),
]


@pytest.mark.slow
def test_every_command_line_row_is_one_line_before_any_work(folder, capsys, monkeypatch):
    from keras_bert_lib import cli
    from keras_bert_lib.corpus import job
    from keras_bert_lib.runs import finetune, pretrain

    for module, name in [(pretrain, "learn_vocabulary"), (pretrain, "build_pretraining_datasets"),
                         (finetune, "load_preprocessor"), (job, "load_corpus_model"), (cli, "load_model_file")]:
        monkeypatch.setattr(module, name, lambda *a, name=name, **k: pytest.fail(f"{name} ran: the input went through"))
    rows = []
    with lock_held_elsewhere(str(folder / "locked" / ".lock")):
        for what, argv, words in CLI:
            assert _exit_code(argv.replace("DIR", str(folder)).split()) == 2, argv
            answer = one_line(capsys.readouterr().err)
            assert words.replace("DIR", str(folder)) in answer, (argv, answer)
            rows.append((what, f"keras-bert {argv}", normalised(answer, folder)))
    assert not (folder / "exported").exists() and not (folder / "locked" / "history.csv").exists()
    check_page("command line", rows, "tests/test_bad_inputs.py")


def _exit_code(argv):
    try:
        return main(argv)
    except SystemExit as e:  # argparse's usage errors
        return e.code


def _checkpoint(folder, **config):
    shutil.rmtree(folder, ignore_errors=True)
    save_checkpoint(bert_tiny(num_hidden_layers=1, vocab_size=60), folder)
    if config:
        data = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**data, **config}))
    return folder


API = [  # (what, the call, a function of the test's folder that makes it)
    ("a class count that is not a positive integer", "TextClassifier(encoder, num_classes=0)",
     lambda folder: TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=0)),
    ("a fractional class count", "TextClassifier(encoder, num_classes=2.5)",
     lambda folder: TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2.5)),
    ("nothing to predict", "model.predict(None)",
     lambda folder: TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2).predict(None)),
    ("a negative learning rate", "LoopConfig(learning_rate=-1e-4)", lambda folder: LoopConfig(learning_rate=-1e-4)),
    ("a config that asks for 10^9 embedding rows", "load_checkpoint(DIR/checkpoint)  # vocab_size 1000000000",
     lambda folder: load_checkpoint(_checkpoint(folder, vocab_size=10**9))),
    ("a config.json cut short", "load_checkpoint(DIR/checkpoint)  # config.json: {\"vocab_size\": 6",
     lambda folder: (_checkpoint(folder), (folder / "config.json").write_text('{"vocab_size": 6'),
                     load_checkpoint(folder))),
    ("a finished output that another job wrote", "run_corpus_job(model, [DIR/texts.txt], DIR/labels.jsonl)",
     lambda folder: run_corpus_job(str(folder.parent / "model.keras"), [str(folder.parent / "texts.txt")],
                                   str(folder.parent / "labels.jsonl"), command="embed")),
]


@pytest.mark.slow
def test_every_python_row_is_one_value_error(folder):
    rows = []
    for what, call, run in API:
        with pytest.raises(ValueError) as error:
            run(folder / "checkpoint")
        answer = str(error.value)
        assert "\n" not in answer and answer, (call, answer)
        rows.append((what, call, normalised(answer, folder)))
    check_page("python", rows, "tests/test_bad_inputs.py")


def test_a_csv_cell_longer_than_pythons_csv_limit_is_read(tmp_path):
    """A long document in a cell (csv's default limit is 131,072 characters): read, and cut by the
    model to its length, as any other long text."""
    from keras_bert_lib.data import read_examples

    path = tmp_path / "train.csv"
    path.write_text("text,label\n\"" + "word " * 40_000 + "\",a\nshort,b\n", encoding="utf-8")
    examples = read_examples(str(path))
    assert len(examples.texts[0]) == 200_000 and examples.labels == ["a", "b"]


def test_weights_that_are_not_finite_stop_training_before_the_first_step(tmp_path):
    from keras_bert_lib.training.callbacks import StopOnNonFiniteLoss

    model = TextClassifier(bert_tiny(num_hidden_layers=1, vocab_size=60), num_classes=2)
    weights = model.encoder.get_layer("token_embedding").embeddings
    weights.assign(np.full(weights.shape, np.nan, "float32"))
    batch = {"token_ids": np.ones((2, 4), "int32"), "segment_ids": np.zeros((2, 4), "int32"),
             "padding_mask": np.ones((2, 4), "int32")}
    with pytest.raises(FloatingPointError, match=r"weights hold NaN or Inf before training .* the checkpoint it "
                                                 r"starts from is damaged"):
        model.fit(batch, np.array([0, 1]), callbacks=[StopOnNonFiniteLoss()], verbose=0)
    assert os.listdir(tmp_path) == []
