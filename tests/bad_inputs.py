"""The table of bad inputs in docs/errors.md, kept true by the tests that run it.

Each row is something a user gets wrong, run as they would run it; the table's last column is
the one line it answers, as it came (folders and process numbers written as DIR and PID). A test
runs every row of a section, checks that its answer is one line naming the words it must name,
and compares the section with the page; `KERAS_BERT_WRITE_DOCS=1` writes the page's section anew.
"""

import os
import re

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "errors.md")


def normalised(message, folder):
    """The message as the page shows it: the test's folder as DIR, a process number as PID."""
    message = message.replace(str(folder), "DIR")
    return re.sub(r"process \d+", "process PID", message)


def section(name, rows, writer):
    """The markdown of one section: | what | input | answer |, each answer in code."""
    lines = [f"<!-- {name}: written by {writer} -->", "", "| what | input | the one line it answers |",
             "|---|---|---|"]
    for what, given, answer in rows:
        cells = [what, f"`{given}`" if given else "", f"`{answer}`"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines + ["", f"<!-- {name}: end -->"])


def check_page(name, rows, writer):
    """Asserts that the page's section `name` is `rows`' table (or writes it, with KERAS_BERT_WRITE_DOCS=1);
    `writer` is the test file that runs the rows."""
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    pattern = re.compile(rf"<!-- {name}: written by .*?<!-- {name}: end -->", re.S)
    assert pattern.search(page), f"docs/errors.md has no section {name}"
    wanted = section(name, rows, writer)
    if os.environ.get("KERAS_BERT_WRITE_DOCS") == "1":
        with open(PAGE, "w", encoding="utf-8") as f:
            f.write(pattern.sub(lambda _: wanted, page))
        return
    assert pattern.search(page).group(0) == wanted, (
        f"docs/errors.md's {name} table is stale: run KERAS_BERT_WRITE_DOCS=1 python -m pytest {writer} and read "
        "the change")


def one_line(text):
    """The one line of a command's error output (argparse's usage line before it set aside)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("usage:")
             and not line.startswith(" ")]
    assert "Traceback" not in text and len(lines) == 1, text
    return lines[0]
