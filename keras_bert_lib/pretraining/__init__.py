"""Pre-training: `BertPretrainer`, an encoder with the masked-LM head and the sentence head (NSP or
SOP), `ElectraDiscriminator` (replaced-token detection), and their metrics. Their data pipelines
are in `keras_bert_lib.data`, their runs in `runs.pretrain`."""

from keras_bert_lib.pretraining.electra import ElectraDiscriminator
from keras_bert_lib.pretraining.pretrainer import BertPretrainer

__all__ = ["BertPretrainer", "ElectraDiscriminator"]
