"""plot_attention: one layer's heads as a PNG grid of heat maps."""

import io
import math

from keras_bert_lib.atomic_write import atomic_write_text


def plot_attention(maps, path, layer=-1, heads=None, columns=4):
    """Draws the heads of one layer as heat maps on one colour scale, and writes a PNG.

    Each map has the attending tokens down the side and the attended ones along the bottom;
    a pair's sentences are parted by a white line. Padding is already left out (`AttentionMaps`).
    Needs matplotlib (the `viz` extra). The file is written atomically.

    Args:
        maps: `AttentionMaps` (from `attention_maps`).
        path: str, the PNG to write.
        layer: int, which layer (negative counts from the top; default the last).
        heads: list of int or None (all heads).
        columns: int, maps per row.
    Returns:
        path.
    Example:
        ```python
        import os, tempfile
        import numpy as np
        from keras_bert_lib.viz import AttentionMaps, plot_attention
        maps = AttentionMaps(["[CLS]", "hi", "[SEP]"], np.full((1, 2, 3, 3), 1 / 3, "float32"))
        plot_attention(maps, os.path.join(tempfile.mkdtemp(), "attention.png"))
        ```
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError("Drawing attention needs matplotlib: pip install 'keras-bert-lib[viz]'.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not -maps.num_layers <= layer < maps.num_layers:
        raise ValueError(
            f"layer={layer}: the model has {maps.num_layers} layers (0 to {maps.num_layers - 1}, "
            "or negative from the top)."
        )
    layer %= maps.num_layers
    heads = list(range(maps.num_heads)) if heads is None else list(heads)
    bad = [h for h in heads if not 0 <= h < maps.num_heads]
    if bad or not heads:
        raise ValueError(f"heads={heads}: choose among 0 to {maps.num_heads - 1}.")
    probs = maps.probs[layer][heads]  # (A', T, T)
    n = len(maps.tokens)
    columns = min(columns, len(heads))
    rows = math.ceil(len(heads) / columns)
    side = max(2.5, 0.22 * n + 1.2)
    fig, axes = plt.subplots(rows, columns, figsize=(side * columns + 1.0, side * rows), squeeze=False)
    scale = dict(vmin=0.0, vmax=float(probs.max()), cmap="viridis")  # one colour scale for all heads
    for k, ax in enumerate(axes.flat):
        if k >= len(heads):
            ax.axis("off")
            continue
        image = ax.imshow(probs[k], **scale)
        ax.set_title(f"layer {layer}, head {heads[k]}", fontsize=9)
        ax.set_xticks(range(n), maps.tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(n), maps.tokens, fontsize=7)
        if maps.boundary is not None:
            for line in (ax.axhline, ax.axvline):
                line(maps.boundary - 0.5, color="white", linewidth=1.2)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="attention probability")
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    atomic_write_text(path, buffer.getvalue())
    return path

