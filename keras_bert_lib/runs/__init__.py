"""The applications over the shared training loop: each a frozen config and a run function."""

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("runs", also=("jax",))

from keras_bert_lib.finetuning import FinetuneConfig  # noqa: E402
from keras_bert_lib.runs.distill import DistillConfig, run_distillation  # noqa: E402
from keras_bert_lib.runs.finetune import finetune_config, run_finetuning  # noqa: E402
from keras_bert_lib.runs.pretrain import PretrainConfig, run_pretraining  # noqa: E402
from keras_bert_lib.runs.quickstart import QuickstartConfig, run_quickstart  # noqa: E402

__all__ = ["DistillConfig", "FinetuneConfig", "PretrainConfig", "QuickstartConfig", "finetune_config",
           "run_distillation", "run_finetuning", "run_pretraining", "run_quickstart"]
