"""Write docs/benchmarks.md from bench/results: every results file as a table under its script.

    python -m bench.report            # rewrite docs/benchmarks.md
    python -m bench.report --check    # exit 1 if docs/benchmarks.md is not what bench/results give

Each script's section opens with its docstring (what it compares, on what text); each results
file gives its CPU, date, commit and command, then its rows. Nothing on the page is typed by hand.
"""

import argparse
import ast
import glob
import json
import os
import sys

from bench.common import HERE, RESULTS

PAGE = os.path.join(os.path.dirname(HERE), "docs", "benchmarks.md")
INTRO = """# Benchmarks

Every measured figure of the project, each with its CPU, date, commit and the command that made it.
This page is written by `python -m bench.report` from the results files under
`bench/results/<cpu>/<date>_<script>.json`; `bench/README.md` says what each script compares and
how long it runs. Timings are medians of interleaved rounds on shared 2-core machines: compare
ratios within one table, not seconds across tables. Other pages state the rules and link here.
"""


def describe(script):
    """The script's docstring without its usage lines: what it compares, on what."""
    path = os.path.join(os.path.dirname(HERE), script)
    doc = ast.get_docstring(ast.parse(open(path, encoding="utf-8").read())) or ""
    paragraphs = [p for p in doc.split("\n\n") if not p.lstrip().startswith(("python ", "KERAS_BACKEND"))]
    return "\n\n".join(" ".join(p.split()) if not p.startswith("    ") else p for p in paragraphs)


def cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|")


def table(rows):
    columns = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def render():
    records = [json.load(open(p, encoding="utf-8")) | {"path": os.path.relpath(p, os.path.dirname(HERE))}
               for p in sorted(glob.glob(os.path.join(RESULTS, "*", "*.json")))]
    out = [INTRO]
    for script in sorted({r["script"] for r in records}):
        name = os.path.splitext(os.path.basename(script))[0]
        out.append(f"## {name}\n\n{describe(script)}\n")
        for r in sorted((r for r in records if r["script"] == script), key=lambda r: r["date"], reverse=True):
            extra = {k: v for k, v in r.items()
                     if k not in ("script", "date", "commit", "cpu", "cores", "argv", "rows", "note", "text", "path")}
            out.append(f"### {r['cpu']}, {r['date']}\n")
            out.append(f"Commit `{r['commit']}`; `{' '.join(r['argv'])}`; {r['cores']} cores; `{r['path']}`.")
            if r.get("note"):
                out.append(f"{r['note'][0].upper()}{r['note'][1:]}.")
            if extra:
                out.append("Settings: " + "; ".join(f"{k} {cell(v)}" for k, v in extra.items()) + ".")
            out.append("")
            if r["rows"]:
                out.append(table(r["rows"]) + "\n")
            if r.get("text"):
                out.append("```\n" + r["text"].strip() + "\n```\n")
    return "\n".join(out).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 if the page differs (default: write)")
    args = parser.parse_args()
    page = render()
    if args.check:
        same = os.path.exists(PAGE) and open(PAGE, encoding="utf-8").read() == page
        print("docs/benchmarks.md is up to date" if same else "docs/benchmarks.md differs: run python -m bench.report")
        sys.exit(0 if same else 1)
    with open(PAGE + ".tmp", "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(PAGE + ".tmp", PAGE)
    print(f"wrote {os.path.relpath(PAGE)}")


if __name__ == "__main__":
    main()
