"""Apache Beam: `RunInference` over our models on raw text, and a ready pipeline
(`python -m keras_bert_lib.beam predict|embed ...`; the beam extra; docs/corpus.md)."""

from keras_bert_lib.beam.handler import BertModelHandler

__all__ = ["BertModelHandler"]
