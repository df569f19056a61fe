"""Every python block in the README and docs/ runs."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCKS = [(page, i, block) for page in PAGES
          for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))]


@pytest.mark.parametrize("page,index,block", BLOCKS,
                         ids=[f"{p.relative_to(ROOT)}#{i}" for p, i, _ in BLOCKS])
def test_code_block_runs(page, index, block):
    exec(compile(block, f"{page.name} block {index}", "exec"), {})


def test_there_are_blocks_to_run():
    assert any(p.name == "README.md" for p, _, _ in BLOCKS)
