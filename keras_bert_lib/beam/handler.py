"""A `RunInference` model handler for our models on raw text.

Beam's own `TFModelHandlerTensor` loads with `tf.keras` and cannot load a raw-string SavedModel
under Keras 3 (apache/beam#30616), so this one loads what `keras-bert predict` loads (a run
folder, a checkpoint folder for embeddings, or an exported SavedModel) once per worker process,
and lets Beam's `BatchElements` put texts of similar length in the same batch
(`batch_length_fn`, `batch_bucket_boundaries`).
"""

from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from keras_bert_lib.corpus.models import load_corpus_model, predict_rows

# Characters, not tokens: the length Beam buckets by must be cheap (a WordPiece piece is about
# 4 characters of English, so these are about 8, 16, 32, 64 and 128 tokens).
BUCKET_BOUNDARIES = [32, 64, 128, 256, 512]


class BertModelHandler(ModelHandler):
    """RunInference over texts: an element is a string, or a dict {"text": ..., "text_pair": ...}
    (the pair is the model's second text: a context for answer spans); its inference is the row
    `keras-bert predict` / `embed` writes ({"label", "score"}, {"embedding"}, ...), or
    {"error": ...} for a text that is null or not UTF-8.

    Args:
        model_path: a fine-tuning run's folder, an exported SavedModel folder, or (with
            `command="embed"`) a checkpoint folder; every worker must be able to read it (a
            gs:// SavedModel on Dataflow, say, copied with the job's files).
        command: "predict" or "embed".
        min_batch_size, max_batch_size: the batch sizes Beam's BatchElements may choose.
    Example:
        ```python
        import apache_beam as beam
        from apache_beam.ml.inference.base import RunInference
        from keras_bert_lib.beam import BertModelHandler
        # with beam.Pipeline() as p:
        #     p | beam.Create(["a fine film"]) | RunInference(BertModelHandler("runs/classify"))
        ```
    """

    def __init__(self, model_path, command="predict", min_batch_size=8, max_batch_size=64):
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size,
                         batch_length_fn=_length, batch_bucket_boundaries=BUCKET_BOUNDARIES)
        self.model_path, self.command, self.max_batch_size = model_path, command, max_batch_size

    def load_model(self):
        return load_corpus_model(self.model_path, self.command, batch_size=self.max_batch_size)

    def run_inference(self, batch, model, inference_args=None):
        # the model's own names for its texts (text, text_pair; question, context), by position
        rows = [dict(zip(model.roles, (e.get("text"), e.get("text_pair")) if isinstance(e, dict) else (e, None)))
                for e in batch]
        rows = [{r: v for r, v in row.items() if r not in model.optional or v is not None} for row in rows]
        return [PredictionResult(e, inference) for e, inference in zip(batch, predict_rows(model, rows))]

    def get_metrics_namespace(self):
        return "keras_bert_lib"

    def share_model_across_processes(self):
        return False  # one model per worker process: TensorFlow's runtime is not shared across processes


def _length(element):
    if isinstance(element, dict):
        return sum(len(v) for v in element.values() if isinstance(v, str))
    return len(element) if isinstance(element, str) else 0
