"""Pre-train BERT: `python recipes/pretrain.py [--config run.json] [--steps 3000] [--corpus a.txt ...]`.

The flags are PretrainConfig's fields (keras_bert_lib/runs/pretrain.py; `--help` lists them with their
defaults); with none, it runs
the quick-start: the standard-library corpus, a learned vocabulary, BERT-Tiny for a few minutes.
The same as `keras-bert pretrain`.
"""

import sys

from keras_bert_lib.cli import main

if __name__ == "__main__":
    sys.exit(main(["pretrain", *sys.argv[1:]]))
