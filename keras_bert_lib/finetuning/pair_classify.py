"""pair_classify: labelled text pairs (entailment, paraphrase: GLUE's MNLI, MRPC, QQP) → TextClassifier
on `[CLS] first [SEP] second [SEP]`, exported with two string inputs."""

import dataclasses

from keras_bert_lib.finetuning.classify import Classify, ClassifyConfig
from keras_bert_lib.finetuning.task import Serving, task_field
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class PairClassifyConfig(ClassifyConfig):
    """The settings of `keras-bert finetune pair_classify`.

    Example:
        ```python
        from keras_bert_lib.finetuning.pair_classify import PairClassifyConfig
        config = PairClassifyConfig(checkpoint="bert/", tfds="glue/mrpc")
        ```
    """

    task: str = task_field("pair_classify")
    text_column: str = option("text", "column of the first text (premise, sentence1, question1)")
    text_pair_column: str = option("text_pair", "column of the second text (hypothesis, sentence2, question2)")


class PairClassify(Classify):
    """Labelled text pairs → `TextClassifier`; a file without the pair column is refused."""

    name = "pair_classify"
    description = "labelled text pairs into classes: entailment, paraphrase (TextClassifier on two texts)"
    reads = ("CSV, TSV or JSONL files with text, text_pair and label columns; or a TFDS data set of pairs "
             "(--tfds glue/mrpc)")
    config_class = PairClassifyConfig
    serves = Serving(inputs=("text", "text_pair"), outputs=("probabilities", "label"))
    pairs = True
