"""A corpus every machine already has: the docstrings of Python's standard library."""

import ast
import os
import re
import sys
import sysconfig

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.progress import progress_bar

# Folders of the standard library that hold tests, demos or third-party code, not documentation.
_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__",
              "turtledemo", "ensurepip", "lib2to3"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |[-=~^*]{3,}$|:\w+:)")


def _sentences(docstring):
    """Prose sentences of one docstring: doctest and rule lines dropped, paragraphs re-flowed."""
    sentences = []
    for paragraph in re.split(r"\n\s*\n", docstring):
        lines = [line.strip() for line in paragraph.splitlines() if not _CODE_LINE.match(line)]
        text = " ".join(line for line in lines if line)
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            if len(sentence.split()) >= 3 and re.search(r"[A-Za-z]{2}", sentence):
                sentences.append(sentence)
    return sentences


def _docstring_documents(path):
    """One document per module, class or function docstring of two sentences or more."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    documents = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            sentences = _sentences(ast.get_docstring(node) or "")
            if len(sentences) >= 2:
                documents.append(sentences)
    return documents


def _source_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def build_stdlib_corpus(path=None, verbose=True):
    """Writes the standard library's docstrings as a pre-training corpus and returns its path.

    Google's pre-training text format: one sentence per line, a blank line between documents;
    one document per module, class or function docstring of two sentences or more (doctests
    dropped). A docstring is one topic, where a module strings unrelated ones together, so
    next-sentence prediction learns coherence rather than which module a sentence is from. The
    source is parsed, never imported, and walked in sorted order, so the corpus is the same on
    every run of the same Python (a few MB of English). It is cached: by default under
    `$KERAS_BERT_LIB_CACHE` or `~/.cache/keras_bert_lib`, and an existing file is reused.
    It is one example of a corpus; the pre-training recipe's `--corpus` takes your own files.

    Args:
        path: where to write; None means the cache file for this Python version.
        verbose: show a progress bar over the modules.
    Returns:
        str: the corpus path.
    Example:
        ```python
        from keras_bert_lib.text import build_stdlib_corpus
        corpus = build_stdlib_corpus(verbose=False)
        first_document = open(corpus, encoding="utf-8").read().split("\\n\\n")[0]
        ```
    """

    if path is None:
        cache = os.environ.get(
            "KERAS_BERT_LIB_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "keras_bert_lib")
        )
        path = os.path.join(cache, f"stdlib_docstrings_py{sys.version_info.major}{sys.version_info.minor}.txt")
    if os.path.isfile(path):
        return path
    files = list(_source_files(sysconfig.get_paths()["stdlib"]))
    bar = progress_bar(len(files), "module") if verbose else None
    documents = []
    for i, file in enumerate(files):
        documents += ["\n".join(sentences) for sentences in _docstring_documents(file)]
        if bar is not None:
            bar.update(i + 1)
    atomic_write_text(path, "\n\n".join(documents) + "\n")
    return path
