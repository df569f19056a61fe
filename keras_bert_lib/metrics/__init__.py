"""Task metrics on whole held-out sets, in NumPy and plain Python, each equal to its usual
reference on the same inputs (tested), so the numbers in a run's report can be set beside
published ones:

    classification.py  accuracy, F1, Matthews correlation        (scikit-learn)
    ranking.py         Spearman correlation; recall@k, MRR@k, MRR by query, retrieval (SciPy; a direct count)
    squad.py           SQuAD exact match and F1                    (the official v1.1 / v2.0 scripts)
    entities.py        entity precision, recall and F1 from tags   (seqeval, default and strict)

and, as a Keras metric (so `fit`'s held-out pass gives the set's number, not a mean of batches'):

    confusion_matrix.py  macro F1, F1, Matthews from a summed confusion matrix
"""

from keras_bert_lib.metrics.classification import accuracy, classification_metrics, f1, matthews
from keras_bert_lib.metrics.confusion_matrix import ClassificationStatistic
from keras_bert_lib.metrics.entities import entity_scores, tags_to_entities
from keras_bert_lib.metrics.ranking import mrr_at_k, mrr_by_query, recall_at_k, retrieval_metrics, spearman
from keras_bert_lib.metrics.squad import normalize_answer, squad_scores

__all__ = ["accuracy", "f1", "matthews", "spearman", "recall_at_k", "mrr_at_k", "mrr_by_query", "retrieval_metrics",
           "classification_metrics", "ClassificationStatistic", "squad_scores", "normalize_answer", "entity_scores",
           "tags_to_entities"]
