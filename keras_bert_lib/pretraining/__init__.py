"""Pre-training: `BertPretrainer`, an encoder with the masked-LM head and the sentence head (NSP or
SOP), and its metrics. Its data pipelines are in `keras_bert_lib.data`, its run in `runs.pretrain`."""

from keras_bert_lib.pretraining.pretrainer import BertPretrainer

__all__ = ["BertPretrainer"]
