"""MaskedLMDistiller: pre-training distillation as DistilBERT did it (Sanh et al., 2019, §2-3)."""

import keras
from keras import ops

from keras_bert_lib.models.trainable_blocks import set_trainable_blocks


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class MaskedLMDistiller(keras.Model):
    """Trains a student pretrainer on a frozen teacher pretrainer's masked-LM outputs:

        L = α_ce · T² · KL(softmax(t/T) ‖ softmax(s/T))     over the masked positions
          + α_mlm · CE(masked token, s)                      the ordinary masked-LM loss
          + α_cos · (1 − cos(h_s, h_t))                      over the tokens that are not padding

    t and s are the teacher's and the student's MLM logits, h their last hidden states (the same
    width: a student from `student_from_teacher`). Each term is a mean over its positions, the
    first two weighted by `masked_lm_weights` (the pre-training data's sample weights), as
    HuggingFace's DistilBERT distiller; defaults are its α_ce = 5, α_mlm = 2, α_cos = 1, T = 2.
    Next-sentence labels, if the data has them, are not used (DistilBERT drops NSP). It takes the
    pre-training datasets' `(inputs, labels, sample_weights)` batches; `fit` logs each term.

    Args:
        teacher: BertPretrainer, frozen here (trainable set to False).
        student: BertPretrainer (sentence_task=None is enough).
        temperature, alpha_ce, alpha_mlm, alpha_cos: floats, as above.
    Call arguments:
        inputs: the pretrainer's dict (`token_ids`, `segment_ids`, `padding_mask`, `masked_positions`).
    Returns:
        dict: the student's `mlm_logits` and `hidden`, the teacher's `teacher_mlm_logits` and
        `teacher_hidden`, all float32.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import BertPretrainer, bert_tiny
        from keras_bert_lib.distillation import MaskedLMDistiller, student_from_teacher
        teacher = BertPretrainer(bert_tiny(vocab_size=50, num_hidden_layers=2), sentence_task=None)
        student = BertPretrainer(student_from_teacher(teacher.encoder, [1]), sentence_task=None)
        distiller = MaskedLMDistiller(teacher, student)
        distiller.compile(optimizer="adam")
        x = {"token_ids": np.random.randint(5, 50, (8, 6)), "segment_ids": np.zeros((8, 6), "int32"),
             "padding_mask": np.ones((8, 6), "int32"), "masked_positions": np.tile([[1, 3]], (8, 1))}
        y = {"mlm_logits": np.random.randint(5, 50, (8, 2))}
        distiller.fit(x, y, sample_weight={"mlm_logits": np.ones((8, 2), "float32")}, epochs=1, verbose=0)
        ```
    Reference:
        Sanh et al., 2019 (https://arxiv.org/abs/1910.01108); HuggingFace transformers'
        examples/research_projects/distillation/distiller.py
    """

    def __init__(self, teacher, student, temperature=2.0, alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0, **kwargs):
        t_width, s_width = teacher.encoder.config.hidden_size, student.encoder.config.hidden_size
        if alpha_cos and t_width != s_width:
            raise ValueError(f"The cosine term compares hidden states, but the teacher's are {t_width} wide and the "
                             f"student's {s_width}: build the student with student_from_teacher, or alpha_cos=0.")
        super().__init__(**kwargs)
        teacher.trainable = False
        set_trainable_blocks(student.encoder, None, pooler=False)  # no loss reads the pooler
        self.teacher, self.student = teacher, student
        self.temperature, self.alpha_ce, self.alpha_mlm, self.alpha_cos = temperature, alpha_ce, alpha_mlm, alpha_cos
        self.terms = {name: keras.metrics.Mean(name=name) for name in ("loss_ce", "loss_mlm", "loss_cos")}

    def call(self, inputs, training=False):
        ids = {k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        outputs = {}
        for prefix, model in (("", self.student), ("teacher_", self.teacher)):
            hidden = model.encoder(ids, training=training and model is self.student)["sequence_output"]
            outputs[prefix + "mlm_logits"] = model.mlm_head(hidden, inputs["masked_positions"])
            outputs[prefix + "hidden"] = ops.cast(hidden, "float32")
        return outputs

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        t = float(self.temperature)
        labels = ops.cast(y["mlm_logits"], "int32")
        weights = ops.cast(sample_weight["mlm_logits"], "float32") if sample_weight else ops.ones(ops.shape(labels))
        student = ops.cast(y_pred["mlm_logits"], "float32")
        teacher = ops.stop_gradient(ops.cast(y_pred["teacher_mlm_logits"], "float32"))
        count = ops.maximum(ops.sum(weights), 1e-9)
        soft = ops.softmax(teacher / t, axis=-1)
        kl = ops.sum(soft * (ops.log_softmax(teacher / t, axis=-1) - ops.log_softmax(student / t, axis=-1)), -1)
        loss_ce = ops.sum(kl * weights) * t * t / count
        mlm = keras.losses.sparse_categorical_crossentropy(labels, student, from_logits=True)
        loss_mlm = ops.sum(mlm * weights) / count
        mask = ops.cast(x["padding_mask"], "float32")
        h_s = ops.cast(y_pred["hidden"], "float32")
        h_t = ops.stop_gradient(ops.cast(y_pred["teacher_hidden"], "float32"))
        cosine = ops.sum(h_s * h_t, -1) / ops.maximum(ops.norm(h_s, axis=-1) * ops.norm(h_t, axis=-1), 1e-8)
        loss_cos = ops.sum((1.0 - cosine) * mask) / ops.maximum(ops.sum(mask), 1.0)
        for name, value in (("loss_ce", loss_ce), ("loss_mlm", loss_mlm), ("loss_cos", loss_cos)):
            self.terms[name].update_state(value)
        total = self.alpha_ce * loss_ce + self.alpha_mlm * loss_mlm + self.alpha_cos * loss_cos
        return total + ops.sum(self.losses) if self.losses else total

    def get_config(self):
        return {"name": self.name, "teacher": keras.saving.serialize_keras_object(self.teacher),
                "student": keras.saving.serialize_keras_object(self.student), "temperature": self.temperature,
                "alpha_ce": self.alpha_ce, "alpha_mlm": self.alpha_mlm, "alpha_cos": self.alpha_cos}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("teacher", "student"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
