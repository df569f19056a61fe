import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The suite never reaches the HuggingFace Hub: a name that reads as a Hub id resolves from the cache
# or fails at once (set before huggingface_hub reads it at import; subprocesses inherit it).
os.environ["HF_HUB_OFFLINE"] = "1"
# Nor Google Analytics: OpenVINO's converter sends usage telemetry unless the user opted out or it
# runs in CI (it reads CI, TF_BUILD or JENKINS_URL), and each event forks the whole test process
# (dozens a conversion: a third of an OpenVINO test's time). JENKINS_URL is the one of the three
# nothing else here reads (CI also switches Hypothesis and pytest to their CI settings).
os.environ.setdefault("JENKINS_URL", "none: the suite turns OpenVINO's telemetry off")
# Each pytest-xdist worker gets its share of the cores for TensorFlow's kernels and for PyTorch's and
# NumPy's (OpenMP and OpenBLAS read OMP_NUM_THREADS), each read when the library starts; subprocesses
# inherit them: two workers with a thread per core each would run four busy threads on two cores,
# and the suite is slower for it.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for _name in ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_name, str(max(1, _CORES // _WORKERS)))

if os.environ.get("PYTEST_XDIST_WORKER"):
    import atexit
    import sys

    def _exit_without_teardown():
        """A worker's results have reached the controller by the time its atexit handlers run;
        the interpreter's teardown after them frees a TensorFlow and PyTorch heap for seconds,
        which the controller waits for. Registered before TensorFlow, Keras and PyTorch load, so
        it runs after their exit handlers."""
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    atexit.register(_exit_without_teardown)

import gc  # noqa: E402

import pytest  # noqa: E402

# Keras is imported where a test first needs it, not here: pytest-xdist's controller loads this
# file too, and it runs no test, so an import here would add TensorFlow's start-up to every run.


def pytest_configure(config):
    """Collecting imports TensorFlow, PyTorch, transformers and the rest: hundreds of thousands
    of objects that live as long as the process, and next to no cyclic garbage. The cycle
    collector would walk them again each time the heap grew by a quarter, and then at every full
    collection between tests. So it is paused while collecting, and what collection built is
    then frozen (`gc.freeze`): left out of every later collection."""
    gc.disable()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """pytest-xdist's controller collects nothing: its collector runs again at once."""
    gc.enable()


def pytest_collection_finish(session):
    gc.freeze()
    gc.enable()


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from seed 0 with no leftover Keras graph state."""
    import keras

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


@pytest.fixture(scope="session")
def few_reviews(tmp_path_factory):
    """The first 64 training and 48 held-out movie reviews (both labels in each) as CSV files,
    {"train": path, "validation": path}: for runs that check plumbing, not learning, at a
    fraction of the 400 and 200 reviews' cost."""
    from keras_bert_lib.data import movie_reviews

    folder, files = tmp_path_factory.mktemp("few_reviews"), {}
    for part, rows in (("train", 64), ("validation", 48)):
        lines = open(movie_reviews()[part], encoding="utf-8").read().splitlines(keepends=True)
        files[part] = str(folder / f"{part}.csv")
        with open(files[part], "w", encoding="utf-8") as f:
            f.writelines(lines[:rows + 1])  # the header and the first rows
    return files


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
    """One small pre-training run that several tests read, made from the command line:
    ALBERT-style (SOP, static masking written as sharded TFRecords), a 300-token vocabulary
    learned on the way, and the paper's two phases (length 16, then 32 from phase 1's weights).

    Returns (argv, {"run": config, "phase1": config, "phase2": config}, report). Its tests are
    marked `xdist_group("finished_run")`, so that one worker makes it once.
    """
    import keras

    from keras_bert_lib.cli import main
    from keras_bert_lib.runs import PretrainConfig

    folder = tmp_path_factory.mktemp("finished_run")
    phases = [{"max_seq_length": 16, "max_predictions": 3, "steps": 6},
              {"max_seq_length": 32, "max_predictions": 5, "steps": 4}]
    argv = ["pretrain", "--corpus", str(_write_tiny_corpus(folder)), "--vocab-size", "300",
            "--output-dir", str(folder / "run"), "--preset", "bert_tiny", "--sentence-task", "sop",
            "--masking", "static", "--num-shards", "2", "--dupe-factor", "2", "--batch-size", "4",
            "--steps-per-epoch", "2", "--warmup-steps", "1", "--eval-fraction", "0.2", "--no-jit-compile",
            "--phases", json.dumps(phases)]
    assert main(argv) == 0
    keras.backend.clear_session(free_memory=False)
    configs = {name: PretrainConfig(**json.loads((folder / "run" / sub / "config.json").read_text()))
               for name, sub in (("run", "."), ("phase1", "phase1"), ("phase2", "phase2"))}
    return argv, configs, json.loads((folder / "run" / "report.json").read_text())


# Files whose tests (or xdist group) run for tens of seconds, the longest first: pytest-xdist hands
# out work in this order, so the two workers do not end with one of them alone on a long test.
SLOW_FIRST = ("test_task_learning.py", "test_family_runs.py", "test_distill_run.py", "test_minilm_classify_run.py",
              "test_server.py", "test_finetune_spans_run.py", "test_wheel.py", "test_kill_and_resume.py",
              "test_docs.py", "test_backends.py", "test_distribution.py", "test_similarity.py",
              "test_jax_training.py", "test_electra_pretrainer.py", "test_beam_pipeline.py", "test_corpus_job.py",
              "test_bfloat16_parity.py", "test_resume.py", "test_phases.py", "test_report.py", "test_tfrecords.py",
              "test_vocabulary.py", "test_pretrain_run.py")


# Fixtures that build one costly thing several tests read (a training run, runs on two replicas or
# on other backends, a converted file): every test that reads one is slow, since in the fast tier
# it would pay for the whole fixture. Tests that are slow on their own carry @pytest.mark.slow.
COSTLY_FIXTURES = {"finished_run", "minilm_classify_run", "classify_run", "distill_run", "teacher", "runs", "outputs",
                   "classifier_file"}


def pytest_collection_modifyitems(items):
    for item in items:
        if COSTLY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))
