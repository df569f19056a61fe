"""Distil a fine-tuned classifier: `python recipes/distill.py --teacher RUN_DIR --train FILE --validation FILE`.

The flags are DistillConfig's fields (keras_bert_lib/runs/distill.py; `--help` lists them with
their defaults). The same as `keras-bert distill`.
"""

import sys

from keras_bert_lib.cli import main

if __name__ == "__main__":
    sys.exit(main(["distill", *sys.argv[1:]]))
