"""similarity: text pairs with a similarity score → a regression (STS-B's setting, BERT §4.1);
Spearman and Pearson correlation with the scores on held-out pairs. The worked example of
docs/tasks.md: this module and one line in the registry are all a new task takes."""

import dataclasses

import numpy as np

from keras_bert_lib.data import text_batches
from keras_bert_lib.finetuning.classify import ClassifyConfig
from keras_bert_lib.finetuning.task import Serving, Task, task_field
from keras_bert_lib.metrics import spearman
from keras_bert_lib.tasks import TextClassifier
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class SimilarityConfig(ClassifyConfig):
    """The settings of `keras-bert finetune similarity`: classify's, with a score for a label."""

    task: str = task_field("similarity")
    label_column: str = option("label", "column of the similarity score (a number, e.g. 0 to 5 in STS-B)")


def _scores(examples):
    for i, value in enumerate(examples.labels):
        try:
            float(value)
        except ValueError:
            raise ValueError(f"{examples.where(i)}: the score {value!r} is not a number.") from None
    return np.array([float(v) for v in examples.labels], "float32")


class Similarity(Task):
    """Scored text pairs → `TextClassifier` with one output, trained on the mean squared error."""

    name = "similarity"
    description = "a similarity score for text pairs, a regression (TextClassifier with one output)"
    reads = "CSV, TSV or JSONL files with text, text_pair and a numeric label column"
    config_class = SimilarityConfig
    model_class = TextClassifier
    metrics = ("spearman", "pearson")
    serves = Serving(inputs=("text", "text_pair"), outputs=("score",))
    prediction_columns = ("text", "text_pair")

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        train, validation = config.read(pairs=True)
        scores = [_scores(part) for part in (train, validation)]
        self.validation_scores = scores[1]
        self.train_data = text_batches(train.inputs, scores[0], preprocessor, config.batch_size, True, config.seed,
                                       config.group_by_length)
        self.validation_inputs = validation.inputs
        self.held_out = text_batches(validation.inputs, scores[1], preprocessor, config.batch_size, False, config.seed)
        self.train_size = self.train_examples = len(train)
        self.validation_examples = len(validation)
        self.baselines = {"mean squared error of the training mean": float(np.mean((scores[1] - scores[0].mean())**2))}

    def build(self, encoder):
        c = self.config
        return TextClassifier(encoder, 1, preprocessor=self.preprocessor, dropout=c.dropout, pooling=c.pooling,
                              trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        predicted = np.asarray(model.predict(self.validation_inputs, verbose=0), np.float64).reshape(-1)
        return {"spearman": spearman(predicted, self.validation_scores),
                "pearson": float(np.corrcoef(predicted, self.validation_scores)[0, 1])}

    @classmethod
    def prediction_rows(cls, model, columns):
        scores = np.asarray(model.predict((columns["text"], columns["text_pair"]), verbose=0)).reshape(-1)
        return [{"score": float(s)} for s in scores]
