"""all-MiniLM-L6-v2 fine-tuned on real movie reviews through `keras-bert finetune classify` (the
conftest's session run, which the distillation tests use as their teacher: one xdist group, so
one worker trains it once)."""

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
