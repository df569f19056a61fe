"""Every python block in the README and docs/ runs."""

import pathlib
import re

import pytest

from tests.examples import run_example

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCKS = [(page, i, block) for page in PAGES
          for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))]


@pytest.mark.slow
@pytest.mark.parametrize("page,index,block", BLOCKS,
                         ids=[f"{p.relative_to(ROOT)}#{i}" for p, i, _ in BLOCKS])
def test_code_block_runs(page, index, block):
    run_example(block, f"{page.name} block {index}")


TUTORIAL_SHELL = [(page, i, block) for page in sorted((ROOT / "docs" / "tutorials").glob("*.md"))
                  for i, block in enumerate(re.findall(r"```bash\n(.*?)```", page.read_text(), re.S))]


@pytest.mark.slow
@pytest.mark.parametrize("page,index,block", TUTORIAL_SHELL,
                         ids=[f"{p.relative_to(ROOT)}#sh{i}" for p, i, _ in TUTORIAL_SHELL])
def test_tutorial_shell_block_runs(page, index, block, tmp_path):
    """The tutorials' command lines run too (in a scratch folder, with the project's console script)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def test_there_are_blocks_to_run():
    assert any(p.name == "README.md" for p, _, _ in BLOCKS)


@pytest.mark.slow
def test_the_site_builds_with_no_warning(tmp_path):
    """mkdocs build --strict: every page in the nav, every link and anchor, every API docstring."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "api" / "layers" / "index.html").exists()


def test_the_front_page_reaches_every_task_in_one_link():
    """Build, load, tokenize, pre-train, fine-tune, export, serve: each a link on the front page to
    a page that exists (and the anchor on it, checked by the strict build)."""
    front = (ROOT / "docs" / "index.md").read_text()
    rows = {
        "build `bert_base`": None,
        "load a checkpoint": "checkpoints.md",
        "tokenize text": "tutorials/tokenization.md",
        "pre-train": "tutorials/pretraining.md",
        "fine-tune": "finetuning.md",
        "export": "export.md",
        "serve with TF Serving": "export.md",
        "serve over HTTP here": "serve.md",
    }
    for task, target in rows.items():
        line = next((ln for ln in front.splitlines() if ln.startswith(f"| {task}")), None)
        assert line is not None, task
        if target:
            assert f"]({target}" in line and (ROOT / "docs" / target).exists(), line
