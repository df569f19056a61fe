"""bench/ is a small package whose figures reach one page: results files in one format, a page
written from them, and no measured figure anywhere else."""

import ast
import json
import pathlib
import re

import pytest

from bench import report

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "bench" / "results").glob("**/*.json"))
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", RESULTS, ids=[str(p.relative_to(ROOT / "bench" / "results")) for p in RESULTS])
def test_every_results_file_says_what_made_it(path):
    record = json.loads(path.read_text())
    cpu_tag, name = path.parent.name, path.stem
    assert path.parent.parent.name == "results" and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", cpu_tag)
    date, _, script = name.partition("_")
    assert record["date"] == date and record["script"] == f"bench/{script}.py", path
    assert (ROOT / record["script"]).exists(), f"{path.name}: its script {record['script']} is gone"
    assert re.fullmatch(r"[0-9a-f]{7,40}( [0-9a-f]{7,40})?(\+changes)?", record["commit"]), record["commit"]
    assert record["cpu"] and record["cores"] >= 1
    assert record["argv"][0] == f"python -m bench.{script}", record["argv"]
    assert isinstance(record["rows"], list) and all(isinstance(r, dict) for r in record["rows"])
    assert record["rows"] or record.get("text"), f"{path.name} holds no figures"


def test_the_benchmarks_page_is_what_the_results_give():
    assert (ROOT / "docs" / "benchmarks.md").read_text() == report.render(), \
        "docs/benchmarks.md is stale: run python -m bench.report"


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_every_bench_script_is_a_plain_module_of_the_package(path):
    source = path.read_text()
    assert "sys.path" not in source, f"{path.name} edits sys.path: run it as python -m bench.{path.stem}"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{path.name} imports {private} from {node.module}"
    if path.stem not in ("common", "report"):
        assert f"| `{path.stem}` |" in (ROOT / "bench" / "README.md").read_text(), \
            f"bench/README.md does not index {path.name}"


# A date, or a CPU's model name: figures and the machines they came from live on docs/benchmarks.md.
DIARY = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|\bEPYC\b|\bXeon\b|\bZen ?\d\b|\bRyzen\b|\bCore i[3579]\b"
                   r"|Sapphire Rapids|Ice Lake|Cascade Lake|Skylake|\b\d+ min \d+ s\b")
PLACES = [ROOT / "README.md", ROOT / "keras_bert_cli.py", *sorted((ROOT / "keras_bert_lib").glob("**/*.py")),
          *sorted(p for p in (ROOT / "docs").glob("**/*.md") if p.name != "benchmarks.md")]


def test_no_date_or_machine_outside_the_benchmarks_page():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:90]}" for p in PLACES
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if DIARY.search(line)]
    assert not found, "figures belong on docs/benchmarks.md, from bench/results:\n" + "\n".join(found)
