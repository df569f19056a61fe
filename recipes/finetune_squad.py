"""Fine-tune a checkpoint: `python recipes/finetune_squad.py --checkpoint DIR --train FILE --validation FILE`.

The flags are FinetuneConfig's fields (keras_bert_lib/runs/finetune.py; `--help` lists them with
their defaults). The same as `keras-bert finetune squad`.
"""

import sys

from keras_bert_lib.cli import main

if __name__ == "__main__":
    sys.exit(main(["finetune", "squad", *sys.argv[1:]]))
