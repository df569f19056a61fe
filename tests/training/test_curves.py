"""curves.png tells training from held-out: each metric one colour, training solid with filled
dots, held-out dashed with open squares, in the plot and in its legend."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from keras_bert_lib.training.curves import plot_curves  # noqa: E402


@pytest.mark.slow
def test_training_and_held_out_lines_differ_in_style_and_legend(tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read it
    plot_curves({"loss": [0.7, 0.6], "val_loss": [0.71, 0.65], "accuracy": [0.5, 0.6], "val_accuracy": [0.55, 0.6]},
                str(tmp_path / "curves.png"), {"majority class": 0.58}, steps_per_epoch=4)
    assert (tmp_path / "curves.png").stat().st_size > 0
    for axes in figures[0].axes:
        lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
        train, held_out = (lines[name] for name in sorted(lines, key=lambda n: n.startswith("held-out")))
        assert train.get_label().startswith("train ") and held_out.get_label().startswith("held-out ")
        assert (train.get_linestyle(), train.get_marker()) == ("-", "o")
        assert (held_out.get_linestyle(), held_out.get_marker(), held_out.get_markerfacecolor()) == ("--", "s", "white")
        assert train.get_color() == held_out.get_color()  # one colour a metric
        assert sorted(t.get_text() for t in axes.get_legend().get_texts()) == sorted(lines)
