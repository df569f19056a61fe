"""Export a fine-tuned model as tflite: `python export/to_tflite.py MODEL [--output DIR] ...`.

MODEL is a .keras file or a run folder holding model.keras. The flags are `keras-bert export`'s
(`--help` lists them with their defaults); this is `keras-bert export MODEL --format tflite`, and
it prints the parity table against the Keras model. See docs/export.md.
"""

import sys

from keras_bert_lib.cli import main

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:], "--format", "tflite"]))
