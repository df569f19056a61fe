import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import BertEncoder, BertPretrainer
from tests import harness
from tests.models.test_encoder import INPUTS, MASK, TINY

SPEC = harness.LayerSpec(
    cls=BertPretrainer,
    init_kwargs=lambda dtype=None: dict(encoder=BertEncoder(**TINY, dtype=dtype), sentence_task="sop"),
    inputs={**INPUTS, "masked_positions": np.array([[1, 5], [0, 3]], "int32")},
    padding_mask=MASK,
    expected_output_shape={"mlm_logits": (2, 2, 50), "nsp_logits": (2, 2)},
    expected_num_trainable_weights=39 + 5 + 2,
    output_dtype="float32", stochastic=True, dict_input=True, fresh_process=False,
)


@pytest.mark.slow
@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.slow
def test_mlm_output_is_tied_to_the_encoder_token_table_after_a_keras_round_trip(tmp_path):
    import keras
    pretrainer = BertPretrainer(kb.bert_tiny(num_hidden_layers=1))
    assert pretrainer.mlm_head.token_embedding is pretrainer.encoder.token_embedding
    pretrainer.save(tmp_path / "p.keras")
    loaded = keras.saving.load_model(tmp_path / "p.keras", safe_mode=True)
    assert loaded.mlm_head.token_embedding is loaded.encoder.token_embedding
    assert loaded.count_params() == pretrainer.count_params()
    # Tied: the V x H table is counted once; the head adds transform, LayerNorm, bias and NSP.
    H, V = 128, 30522
    assert pretrainer.count_params() == pretrainer.encoder.count_params() + (H * H + H) + 2 * H + V + (2 * H + 2)


def test_albert_pretrainer_projects_to_the_embedding_width():
    pretrainer = BertPretrainer(kb.albert_base(num_hidden_layers=1), sentence_task="sop")
    assert pretrainer.mlm_head.transform.kernel.shape == (768, 128)
    assert "sop_head" in [layer.name for layer in pretrainer.layers]


@pytest.mark.slow
def test_sentence_task_without_a_pooler_is_refused():
    with pytest.raises(ValueError, match="no pooler .* pass sentence_task=None"):
        BertPretrainer(kb.distilbert_base(num_hidden_layers=1))
    assert set(BertPretrainer(kb.distilbert_base(num_hidden_layers=1), sentence_task=None).output) == {"mlm_logits"}


@pytest.mark.slow
def test_a_compiled_pretrainer_loads_compiled_with_its_optimizer_state(tmp_path):
    import warnings

    import keras
    pretrainer = BertPretrainer(kb.bert_tiny(num_hidden_layers=1), sentence_task="nsp")
    pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-3), jit_compile=False)
    batch = {"token_ids": np.full((2, 8), 7, "int32"), "segment_ids": np.zeros((2, 8), "int32"),
             "padding_mask": np.ones((2, 8), "int32"), "masked_positions": np.array([[1, 2], [3, 4]], "int32")}
    pretrainer.train_on_batch(
        batch,
        {"mlm_logits": np.ones((2, 2), "int32"), "nsp_logits": np.zeros(2, "int32")},
        sample_weight={"mlm_logits": np.ones((2, 2), "float32"), "nsp_logits": np.ones(2, "float32")},
    )
    pretrainer.save(tmp_path / "p.keras")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(tmp_path / "p.keras", safe_mode=True)
    assert loaded.compiled and loaded.optimizer.iterations.numpy() == 1
    slots = [v.numpy() for v in pretrainer.optimizer.variables]
    np.testing.assert_array_equal(np.concatenate([s.ravel() for s in slots]),
                                  np.concatenate([v.numpy().ravel() for v in loaded.optimizer.variables]))
    assert not [w for w in caught if "compile" in str(w.message) or "optimizer" in str(w.message)], \
        [str(w.message) for w in caught]
