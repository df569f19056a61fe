"""MaskedLMDistiller: its loss equals DistilBERT's three terms written out in NumPy, training it
moves the student's masked-LM distribution and hidden states towards the frozen teacher's, and
it refuses a cosine term between hidden states of different widths."""

import keras
import numpy as np
import pytest

from keras_bert_lib import BertEncoder, BertPretrainer, bert_tiny
from keras_bert_lib.distillation import MaskedLMDistiller, student_from_teacher
from tests import harness
from tests.models.test_encoder import INPUTS, MASK, TINY

SPEC = harness.LayerSpec(
    cls=MaskedLMDistiller,
    init_kwargs=lambda dtype=None: dict(
        teacher=BertPretrainer(BertEncoder(**TINY, dtype=dtype), sentence_task=None),
        student=BertPretrainer(BertEncoder(**{**TINY, "num_hidden_layers": 1}, dtype=dtype), sentence_task=None),
        temperature=3.0, alpha_ce=1.0, alpha_mlm=0.5, alpha_cos=0.25),
    inputs={**INPUTS, "masked_positions": np.array([[1, 5], [0, 3]], "int32")},
    padding_mask=MASK,
    expected_output_shape={"hidden": (2, 6, 16), "mlm_logits": (2, 2, 50), "teacher_hidden": (2, 6, 16),
                           "teacher_mlm_logits": (2, 2, 50)},
    # The student's one block (16), embeddings (5) and masked-LM head (5); its pooler and the teacher are frozen.
    expected_num_trainable_weights=16 + 5 + 5,
    output_dtype="float32", stochastic=True, dict_input=True,
)


@pytest.mark.slow
@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)

V, B, L, P = 60, 16, 10, 3


def _teacher(layers=3, **kwargs):
    encoder = bert_tiny(vocab_size=V, num_hidden_layers=layers, max_position_embeddings=16, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, **kwargs)
    return BertPretrainer(encoder, sentence_task=None)


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((B, L), "int32")
    mask[: B // 2, 7:] = 0  # padding in half the rows
    x = {"token_ids": rng.integers(5, V, (B, L)).astype("int32") * mask, "segment_ids": np.zeros((B, L), "int32"),
         "padding_mask": mask, "masked_positions": np.tile(np.array([[1, 3, 5]], "int32"), (B, 1))}
    weights = np.ones((B, P), "float32")
    weights[::3, 2] = 0.0  # fewer real predictions in some rows
    return x, {"mlm_logits": rng.integers(5, V, (B, P)).astype("int32")}, {"mlm_logits": weights}


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.mark.slow
def test_the_loss_is_distilberts_three_terms():
    keras.utils.set_random_seed(0)
    teacher = _teacher()
    distiller = MaskedLMDistiller(
        teacher,
        BertPretrainer(student_from_teacher(teacher.encoder, [2]), sentence_task=None),
        temperature=2.0,
        alpha_ce=5.0,
        alpha_mlm=2.0,
        alpha_cos=1.0,
    )
    x, y, w = _batch()
    out = {k: np.asarray(v, "float64") for k, v in distiller(x).items()}
    s, t, weights = out["mlm_logits"], out["teacher_mlm_logits"], w["mlm_logits"]
    kl = (np.exp(_log_softmax(t / 2)) * (_log_softmax(t / 2) - _log_softmax(s / 2))).sum(-1)
    ce = (kl * weights).sum() / weights.sum() * 4
    nll = -np.take_along_axis(_log_softmax(s), y["mlm_logits"][..., None], -1)[..., 0]
    mlm = (nll * weights).sum() / weights.sum()
    hs, ht, mask = out["hidden"], out["teacher_hidden"], x["padding_mask"]
    cos = (hs * ht).sum(-1) / (np.linalg.norm(hs, axis=-1) * np.linalg.norm(ht, axis=-1))
    cosine = ((1 - cos) * mask).sum() / mask.sum()
    got = float(distiller.compute_loss(x, y, distiller(x), w))
    assert got == pytest.approx(5 * ce + 2 * mlm + cosine, rel=1e-5)
    assert float(distiller.terms["loss_cos"].result()) == pytest.approx(cosine, abs=1e-6)  # 1 - cos in float32
    # The teacher as its own student: no soft and no cosine loss, only the masked-LM one.
    itself = MaskedLMDistiller(teacher, _copy(teacher))
    assert float(itself.compute_loss(x, y, itself(x), w)) == pytest.approx(2 * mlm_of(teacher, x, y, w), rel=1e-5)


def _copy(pretrainer):
    twin = BertPretrainer(
        student_from_teacher(pretrainer.encoder, list(range(pretrainer.encoder.config.num_hidden_layers))),
        sentence_task=None,
    )
    twin.mlm_head.set_weights(pretrainer.mlm_head.get_weights())
    return twin


def mlm_of(pretrainer, x, y, w):
    logits = np.asarray(pretrainer(x)["mlm_logits"], "float64")
    nll = -np.take_along_axis(_log_softmax(logits), y["mlm_logits"][..., None], -1)[..., 0]
    return (nll * w["mlm_logits"]).sum() / w["mlm_logits"].sum()


@pytest.mark.slow
def test_training_moves_the_student_towards_the_frozen_teacher():
    keras.utils.set_random_seed(1)
    teacher = _teacher()
    student = _teacher(layers=1)  # a fresh network, far from the teacher in both outputs
    distiller = MaskedLMDistiller(teacher, student, alpha_mlm=0.0)  # the teacher's signal only
    frozen = [np.array(v) for v in teacher.weights]
    x, y, w = _batch()

    def gaps():
        out = {k: np.asarray(v, "float64") for k, v in distiller(x).items()}
        p = np.exp(_log_softmax(out["teacher_mlm_logits"]))
        kl = (p * (_log_softmax(out["teacher_mlm_logits"]) - _log_softmax(out["mlm_logits"]))).sum(-1).mean()
        hs, ht = out["hidden"], out["teacher_hidden"]
        cos = ((hs * ht).sum(-1) / (np.linalg.norm(hs, axis=-1) * np.linalg.norm(ht, axis=-1))).mean()
        return kl, cos
    kl_before, cos_before = gaps()
    distiller.compile(optimizer=keras.optimizers.Adam(2e-3), jit_compile=False)
    history = distiller.fit(x, y, sample_weight=w, batch_size=8, epochs=30, verbose=0).history
    kl_after, cos_after = gaps()
    print(f"KL {kl_before:.4f} → {kl_after:.4f}, cosine {cos_before:.3f} → {cos_after:.3f}")
    assert kl_after < 0.5 * kl_before and cos_after > cos_before + 0.2, (kl_before, kl_after, cos_before, cos_after)
    assert {"loss_ce", "loss_mlm", "loss_cos"} <= set(history)
    for before, after in zip(frozen, teacher.weights):
        np.testing.assert_array_equal(before, after)


def test_hidden_states_of_another_width_need_alpha_cos_zero():
    teacher = _teacher(layers=1)
    narrow = BertPretrainer(bert_tiny(vocab_size=V, num_hidden_layers=1, hidden_size=64, num_attention_heads=2,
                                      intermediate_size=128), sentence_task=None)
    with pytest.raises(ValueError, match="the teacher's are 128 wide and the student's 64"):
        MaskedLMDistiller(teacher, narrow)
    MaskedLMDistiller(teacher, narrow, alpha_cos=0.0)
