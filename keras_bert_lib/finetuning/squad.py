"""squad: SQuAD v1.1 / v2.0 JSON → SpanQuestionAnswerer; exact match and F1 (percent) by the
official scripts' rules (BERT §4.2, §4.3)."""

import dataclasses
import json

from keras_bert_lib.data import array_batches, read_squad
from keras_bert_lib.finetuning.task import FinetuneConfig, Serving, Task, task_field
from keras_bert_lib.metrics import squad_scores
from keras_bert_lib.tasks import SpanQuestionAnswerer
from keras_bert_lib.text import squad_features
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class SquadConfig(FinetuneConfig):
    """The settings of `keras-bert finetune squad` (recipes/squad_v1.toml: Google's run_squad.py).

    Example:
        ```python
        from keras_bert_lib.finetuning.squad import SquadConfig
        config = SquadConfig(checkpoint="bert/", train="train-v1.1.json", validation="dev-v1.1.json")
        ```
    """

    task: str = task_field("squad")
    train: str | None = option(None, "training questions: SQuAD JSON (v1.1 or v2.0)", input_path=True)
    max_seq_length: int = option(128, "tokens per window of question and context, [CLS] and [SEP]s included "
                                      "(run_squad.py used 384)")
    max_query_length: int = option(64, "word pieces kept of each question")
    doc_stride: int = option(128, "word pieces between the starts of a long context's windows (HuggingFace's "
                                  "stride is the overlap instead)")
    max_answer_length: int = option(30, "the longest answer, in word pieces")
    version_2: bool = option(False, "SQuAD v2.0, where no answer wins past the threshold")
    null_score_diff_threshold: float = option(0.0, "v2.0: how much the [CLS] score must beat the best span's for "
                                                   "no answer")


def _questions(path):
    with open(path, encoding="utf-8") as f:
        return sum(len(p["qas"]) for article in json.load(f)["data"] for p in article["paragraphs"])


class Squad(Task):
    """SQuAD JSON → `SpanQuestionAnswerer`: start and end logits over windows of each context."""

    name = "squad"
    description = "extractive question answering: the answer's span in a context (SpanQuestionAnswerer)"
    reads = "SQuAD v1.1 or v2.0 JSON files (train-v1.1.json, dev-v1.1.json)"
    config_class = SquadConfig
    model_class = SpanQuestionAnswerer
    metrics = ("exact_match", "f1", "skipped_questions")
    serves = Serving(inputs=("text", "text_pair"), outputs=("start_logits", "end_logits"))
    prediction_columns = ("question", "context")

    def __init__(self, config, preprocessor):
        super().__init__(config, preprocessor)
        train, self.validation = (read_squad(path, mismatched="skip") for path in (config.train, config.validation))
        with open(config.validation, encoding="utf-8") as f:
            self.dataset = json.load(f)["data"]  # what squad_scores reads
        self.skipped = {"train": _questions(config.train) - len(train),
                        "validation": squad_scores(self.dataset, {})["questions"] - len(self.validation)}
        features, held = (squad_features([e.question for e in part], [e.context for e in part],
                                         preprocessor.tokenizer, preprocessor.sequence_length, config.max_query_length,
                                         config.doc_stride, [e.answers[0] if e.answers else None for e in part])
                          for part in (train, self.validation))
        self.train_size = len(features.example_index)  # windows: one example can give several
        self.train_data = array_batches(features.inputs, features.labels, config.batch_size, True, config.seed)
        self.held_out = array_batches(held.inputs, held.labels, config.batch_size, False, config.seed)
        empty = squad_scores(self.dataset, {e.id: "" for e in self.validation})
        self.baselines = {"empty answer": {"exact_match": empty["exact_match"], "f1": empty["f1"]}}
        self.train_examples, self.validation_examples = len(train), len(self.validation)

    def build(self, encoder):
        c = self.config
        return SpanQuestionAnswerer(encoder, preprocessor=self.preprocessor, max_query_length=c.max_query_length,
                                    doc_stride=c.doc_stride, max_answer_length=c.max_answer_length,
                                    trainable_blocks=c.trainable_blocks)

    def evaluate(self, model):
        answers = model.answer([e.question for e in self.validation], [e.context for e in self.validation],
                               version_2=self.config.version_2,
                               null_score_diff_threshold=self.config.null_score_diff_threshold,
                               batch_size=self.config.batch_size)
        scores = squad_scores(self.dataset, {e.id: a["text"] for e, a in zip(self.validation, answers)})
        return {"exact_match": scores["exact_match"], "f1": scores["f1"], "skipped_questions": self.skipped}

    @classmethod
    def prediction_rows(cls, model, columns):
        """{"text", "start", "end", "score"}: the answer and its character offsets in the context."""
        return model.answer(list(columns["question"]), list(columns["context"]))
