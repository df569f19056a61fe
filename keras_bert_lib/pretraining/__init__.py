"""Pre-training: `BertPretrainer`, an encoder with the masked-LM head and the sentence head (NSP or
SOP); ELECTRA's `ElectraDiscriminator` (replaced-token detection) and `ElectraPretrainer` (a
generator, `electra_generator`, reading the discriminator's embeddings, and the discriminator);
their metrics. Their data pipelines are in
`keras_bert_lib.data`, their runs in `runs.pretrain`."""

from keras_bert_lib.pretraining.electra import ElectraDiscriminator
from keras_bert_lib.pretraining.electra_pretrainer import ElectraPretrainer, electra_generator
from keras_bert_lib.pretraining.pretrainer import BertPretrainer
from keras_bert_lib.pretraining.token_sampler import ReplacedTokenSampler

__all__ = ["BertPretrainer", "ElectraDiscriminator", "ElectraPretrainer", "ReplacedTokenSampler", "electra_generator"]
