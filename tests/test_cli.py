import subprocess
import sys


def test_summary_prints_the_reference_parameter_count_and_a_timing():
    """The main job: `keras-bert summary bert_tiny` (count from shared/reference.md)."""
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_lib.cli", "summary", "bert_tiny", "--length", "32", "--repeats", "2"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "bert_tiny: 4,385,920 parameters" in result.stdout
    assert "TransformerEncoderBlock" in result.stdout
    assert "forward, batch 1 x 32 tokens, float32, XLA:" in result.stdout


def test_summary_refuses_a_length_the_preset_cannot_take():
    result = subprocess.run([sys.executable, "-m", "keras_bert_lib.cli", "summary", "bert_tiny", "--length", "600"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "--length 600 exceeds bert_tiny's 512 positions" in result.stderr
