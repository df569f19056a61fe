"""The real vocabulary and reference text of tests/text, for the question-answering features."""

from tests.text.conftest import reference_lines, stdlib_corpus, vocab_path  # noqa: F401
