"""`python -m keras_bert_lib.beam predict|embed --model M --input GLOB --output PREFIX [Beam options]`."""

from keras_bert_lib.beam.pipeline import main

raise SystemExit(main())
