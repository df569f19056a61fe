"""Running a model over a corpus: `keras-bert predict` / `keras-bert embed` (docs/corpus.md)."""

from keras_bert_lib.corpus.job import run_corpus_job
from keras_bert_lib.corpus.models import CorpusModel, load_corpus_model

__all__ = ["CorpusModel", "load_corpus_model", "run_corpus_job"]
