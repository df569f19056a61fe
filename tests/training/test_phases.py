"""The paper's two-phase schedule as configuration: phase 2 starts from phase 1's weights."""

import os

import numpy as np
import pytest


@pytest.mark.xdist_group("finished_run")
def test_two_phases_run_in_order_from_the_first_phases_weights(finished_run):
    from keras_bert_lib import BertPretrainer, bert_tiny

    _, configs, report = finished_run
    assert [p["steps"] for p in report["phases"]] == [6, 4]
    out = configs["run"].output_dir
    assert [configs[p].max_seq_length for p in ("phase1", "phase2")] == [16, 32]
    assert configs["phase2"].init_checkpoint == os.path.join(out, "phase1", "pretrainer.weights.h5")
    assert configs["phase2"].vocab == os.path.join(out, "phase1", "vocab.txt")  # learned once
    assert not os.path.exists(os.path.join(out, "phase2", "vocab.txt"))

    vocab_size = len(open(configs["phase2"].vocab, encoding="utf-8").read().splitlines())

    def weights(phase):
        model = BertPretrainer(bert_tiny(vocab_size=vocab_size), sentence_task="sop")
        model.load_weights(os.path.join(out, phase, "pretrainer.weights.h5"))
        return model.encoder.token_embedding.embeddings.numpy()

    first, second = weights("phase1"), weights("phase2")
    fresh = BertPretrainer(
        bert_tiny(vocab_size=vocab_size), sentence_task="sop"
    ).encoder.token_embedding.embeddings.numpy()
    # Phase 2's four small steps moved phase 1's weights a little; a fresh start is far away.
    assert np.abs(second - first).max() < 0.05 < np.abs(second - fresh).max()
