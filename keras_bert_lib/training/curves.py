"""Training curves: the history a run logs (CSV) and its loss/accuracy plot (PNG)."""

import csv


def read_history(path):
    """{metric: [value per epoch]} from a Keras `CSVLogger` file.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.training.curves import read_history
        path = os.path.join(tempfile.mkdtemp(), "history.csv")
        open(path, "w").write("epoch,loss\\n0,2.5\\n1,2.0\\n")
        assert read_history(path) == {"loss": [2.5, 2.0]}
        ```
    """
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keys = [k for k in (rows[0] if rows else {}) if k != "epoch" and rows[0][k] != "NA"]
    return {k: [float(r[k]) for r in rows] for k in keys}


def plot_curves(history, path, baselines=None, steps_per_epoch=1):
    """Loss and accuracy curves as a PNG: each metric one colour, training solid with filled dots
    and held-out (`val_` keys) dashed with open squares, so that the two read apart in the plot
    and its legend; the baselines as grey lines. Needs matplotlib (the `train` extra).

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.training.curves import plot_curves
        plot_curves({"loss": [3.0, 2.0], "val_loss": [3.1, 2.2], "mlm_logits_accuracy": [0.1, 0.2]},
                    os.path.join(tempfile.mkdtemp(), "c.png"), steps_per_epoch=100)
        ```
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError("Drawing curves needs matplotlib: pip install 'keras-bert-lib[train]'.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = sorted({k.removeprefix("val_") for k in history})
    for key in sorted(history):
        name = key.removeprefix("val_")
        target = left if "loss" in name else right if "accuracy" in name else None
        if target is not None:
            held_out = key.startswith("val_")
            steps = [steps_per_epoch * (i + 1) for i in range(len(history[key]))]
            target.plot(steps, history[key], "--" if held_out else "-", marker="s" if held_out else "o",
                        markersize=5 if held_out else 4, markerfacecolor="white" if held_out else None,
                        color=f"C{names.index(name)}", label=("held-out " if held_out else "train ") +
                        name.replace("_logits", ""))
    for name, value in (baselines or {}).items():
        right.axhline(value, linestyle=":", linewidth=1, color="grey")
        right.text(steps_per_epoch, value, name, fontsize=7, va="bottom")
    xlabel = "step" if steps_per_epoch > 1 else "epoch"
    left.set(title="loss", xlabel=xlabel)
    right.set(title="accuracy", xlabel=xlabel, ylim=(0, 1))
    for ax in (left, right):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, handlelength=3.5)  # long enough to show the dashes
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
