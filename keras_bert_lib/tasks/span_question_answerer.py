"""SpanQuestionAnswerer: extractive question answering, the answer as a span of the context (BERT §4.2, SQuAD)."""

import keras
import numpy as np

from keras_bert_lib.heads import SpanHead
from keras_bert_lib.layers.masks import MASK_VALUE
from keras_bert_lib.tasks.task_model import HEAD_DTYPE, TaskModel, default_optimizer


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SpanQuestionAnswerer(TaskModel):
    """[start, end] logits = hidden states · W + b over `[CLS] question [SEP] context [SEP]`; the
    answer is the context span from the best start to the best end.

    `answer(question, context)` reads contexts of any length as Google's run_squad.py does:
    windows of the context `doc_stride` word pieces apart, the question cut to `max_query_length`,
    each token scored in the window where it has the most context, the `n_best_size` best starts
    and ends paired into spans of at most `max_answer_length` tokens, and the best mapped back to
    characters of the original context. Trained on the windows of `features(...)` with the mean of
    the start and end cross-entropies (BERT's loss); a window without the answer points at [CLS].

    Args:
        encoder: BertEncoder.
        preprocessor: BertPreprocessor or None; its tokenizer and `sequence_length` (run_squad:
            384) build the windows. Without one the model takes the id dict only.
        max_query_length, doc_stride, max_answer_length, n_best_size: run_squad.py's 64, 128, 30, 20.
        trainable_blocks: None, k or 0; see `set_trainable_blocks`.
    Call arguments:
        inputs: the id dict of packed windows.
    Returns:
        dict of float32 `start_logits` and `end_logits` (B, T); padding gets a large negative value.
    Example:
        ```python
        from keras_bert_lib import SpanQuestionAnswerer, bert_tiny
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "in", "france", "?", "."]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=16)
        reader = SpanQuestionAnswerer(bert_tiny(vocab_size=len(vocab), num_hidden_layers=1), preprocessor)
        sorted(reader.answer("Where is Paris?", "Paris is in France."))   # ['end', 'score', 'start', 'text']
        ```
    Reference:
        Devlin et al., 2019, §4.2; Google's run_squad.py
    """

    _padding_fill = MASK_VALUE  # predict's span logits at padding: what SpanHead gives there

    def __init__(self, encoder, preprocessor=None, max_query_length=64, doc_stride=128, max_answer_length=30,
                 n_best_size=20, trainable_blocks=None, **kwargs):
        # === Layers ===
        head = SpanHead(encoder.config.initializer_range, name="span", dtype=HEAD_DTYPE)
        # === Functional graph ===
        inputs = self._encoder_inputs()
        outputs = head(encoder(inputs)["sequence_output"], padding_mask=inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.head = head
        self.max_query_length = max_query_length
        self.doc_stride = doc_stride
        self.max_answer_length = max_answer_length
        self.n_best_size = n_best_size
        self._finish_init(encoder, preprocessor, trainable_blocks, uses_pooler=False)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """(start cross-entropy + end cross-entropy) / 2 and the start's and end's accuracy, unless told otherwise."""
        if loss == "auto":
            loss = {
                k: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for k in ("start_logits", "end_logits")
            }
            kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        if metrics == "auto":
            metrics = {
                k: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")] for k in ("start_logits", "end_logits")
            }
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def features(self, questions, contexts, answers=None):
        """The packed windows of (question, context) examples, with `answers` ((text, start
        character) or None each) for training: `fit(f.inputs, f.labels)`. See `squad_features`."""
        from keras_bert_lib.text import squad_features  # TensorFlow-only; the model itself runs on any backend

        tokenizer, length = self._tokenizer_and_length()
        return squad_features(questions, contexts, tokenizer, length, self.max_query_length, self.doc_stride, answers)

    def answer(self, question, context, version_2=False, null_score_diff_threshold=0.0, batch_size=32):
        """The answer span of the context: {"text", "start", "end", "score"} with `context[start:end]
        == text` and score = start logit + end logit; for lists of questions and contexts, a list.

        With `version_2` (SQuAD v2.0), "no answer" ({"text": "", "start": None, "end": None}) wins
        when the [CLS] score beats the best span's by more than `null_score_diff_threshold`.
        """
        from keras_bert_lib.text import best_span  # TensorFlow-only import chain, as above

        single = isinstance(question, str)
        questions, contexts = ([question], [context]) if single else (list(question), list(context))
        features = self.features(questions, contexts)
        logits = self.predict(features.inputs, batch_size=batch_size, verbose=0)
        results = []
        for k, text in enumerate(contexts):
            rows = np.flatnonzero(features.example_index == k)
            span = best_span(features.windows[k], logits["start_logits"][rows], logits["end_logits"][rows],
                             features.offsets[k], features.query_lengths[k], self.n_best_size, self.max_answer_length,
                             version_2, null_score_diff_threshold, self.preprocessor.tokenizer.packing)
            if span is None:
                results.append({"text": "", "start": None, "end": None, "score": None})
            else:
                results.append({"text": text[span[0]:span[1]], "start": span[0], "end": span[1], "score": span[2]})
        return results[0] if single else results

    def checkpoint_class_names(self):
        raise ValueError(
            "A HuggingFace BertForQuestionAnswering export is not written yet: save the model as .keras, or its "
            "encoder alone with save_checkpoint(model.encoder, folder)."
        )

    def get_config(self):
        return {**self._base_config(), "max_query_length": self.max_query_length, "doc_stride": self.doc_stride,
                "max_answer_length": self.max_answer_length, "n_best_size": self.n_best_size}
