"""The pre-training report: its held-out numbers are the final weights' on the held-out set."""

import numpy as np
import pytest


@pytest.mark.xdist_group("finished_run")
def test_report_equals_a_fresh_evaluation_of_the_saved_pretrainer(finished_run):
    from keras_bert_lib.data import build_pretraining_datasets
    from keras_bert_lib.models import build_encoder
    from keras_bert_lib.pretraining import BertPretrainer
    from keras_bert_lib.runs.pretrain import encoder_config
    from keras_bert_lib.text import WordPieceTokenizer

    _, configs, run_report = finished_run
    config, report = configs["phase2"], run_report["phases"][1]  # the run's report is its last phase's
    assert run_report["held_out"] == report["held_out"]
    assert report["steps"] == config.steps and report["eval_instances"] > 8

    tokenizer = WordPieceTokenizer(config.vocab, lowercase=config.lowercase)
    pretrainer = BertPretrainer(build_encoder(encoder_config(config, tokenizer.vocabulary_size())),
                                sentence_task=config.sentence_task)
    pretrainer.load_weights(f"{config.output_dir}/pretrainer.weights.h5")
    pretrainer.compile(jit_compile=False)
    held_out = build_pretraining_datasets(
        config.corpus, tokenizer, max_seq_length=config.max_seq_length, max_predictions=config.max_predictions,
        dupe_factor=config.dupe_factor, batch_size=config.batch_size, eval_fraction=config.eval_fraction,
        sentence_task=config.sentence_task, verbose=False).held_out
    fresh = pretrainer.evaluate(held_out, return_dict=True, verbose=0)
    for name in ("loss", "mlm_logits_accuracy", "mlm_logits_perplexity", "nsp_logits_accuracy"):
        np.testing.assert_allclose(report["held_out"][name], fresh[name], rtol=1e-5, err_msg=name)
