"""OpenAI's and TEI's APIs on `keras-bert serve`, on loopback: the `openai` client's
`embeddings.create` equals the embedder's `predict` (cosine ≥ 0.9999), with usage counted in the
model's tokens; `dimensions` cuts and normalises; base64 decodes to the same floats; `/embed` and
`/rerank` answer as TEI's bodies say, with the numbers of `predict` and `rank`; every bad request
is a 400 (an unknown model a 404) naming the problem, and the server keeps serving."""

import base64

import numpy as np
import pytest

from keras_bert_lib import CrossEncoder, SentenceEmbedder, TextClassifier, bert_tiny
from keras_bert_lib.export import export_saved_model
from tests.serve.server_process import call, running_server
from tests.tasks.test_task_models import VOCAB, _preprocessor, _tiny

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve")]
TEXTS = ["good film", "what is a bot ?", "bad plot . bad acting", "film"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("apis")
    # 256 wide, unnormalised: the server's normalising and cutting are what is tested
    embedder = SentenceEmbedder(bert_tiny(vocab_size=len(VOCAB), num_hidden_layers=1, hidden_size=256,
                                          num_attention_heads=4, intermediate_size=512, hidden_dropout_prob=0.0,
                                          attention_probs_dropout_prob=0.0),
                                preprocessor=_preprocessor(), normalize=False)
    reranker = CrossEncoder(_tiny(), preprocessor=_preprocessor())
    embedder.inference_dtype = reranker.inference_dtype = None  # float32, as the exported SavedModels compute
    models = {"embedder": (embedder, False), "reranker": (reranker, True),
              "classifier": (TextClassifier(_tiny(), 2, preprocessor=_preprocessor()), False)}
    for name, (model, pair) in models.items():
        export_saved_model(model, folder / name, pair=pair)
    (folder / "log").mkdir()
    with running_server([f"{name}={folder / name}" for name in models], str(folder / "log")) as (url, _):
        yield url, embedder, reranker


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_the_openai_client_gets_the_models_embeddings_and_usage(served):
    url, embedder, _ = served
    import openai  # in the [test] extra; imported here, since the fast tier runs no test of this file

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    assert sorted(m.id for m in client.models.list().data) == ["classifier", "embedder", "reranker"]
    want = _unit(np.asarray(embedder.predict(TEXTS, verbose=0)))
    answer = client.embeddings.create(model="embedder", input=TEXTS)
    got = np.array([d.embedding for d in sorted(answer.data, key=lambda d: d.index)])
    assert np.min(np.sum(_unit(got) * want, axis=1)) >= 0.9999
    tokens = int(np.asarray(embedder.preprocessor(TEXTS)["padding_mask"]).sum())
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == tokens
    cut = np.array([d.embedding for d in client.embeddings.create(model="embedder", input=TEXTS,
                                                                  dimensions=128).data])
    assert cut.shape == (4, 128) and np.allclose(np.linalg.norm(cut, axis=1), 1.0, atol=1e-5)
    assert np.max(np.abs(cut - _unit(want[:, :128]))) <= 1e-4
    one = client.embeddings.create(model="embedder", input="good film")
    assert len(one.data) == 1 and np.allclose(one.data[0].embedding, got[0], atol=1e-6)


def test_base64_decodes_to_the_same_floats(served):
    url = served[0]
    status, floats = call(url, "POST", "/v1/embeddings", {"model": "embedder", "input": TEXTS})
    status64, packed = call(url, "POST", "/v1/embeddings", {"model": "embedder", "input": TEXTS,
                                                            "encoding_format": "base64"})
    assert status == status64 == 200
    for plain, encoded in zip(floats["data"], packed["data"], strict=True):
        decoded = np.frombuffer(base64.b64decode(encoded["embedding"]), "<f4")
        np.testing.assert_array_equal(decoded, np.asarray(plain["embedding"], "float32"))


def test_tei_embed_and_rerank_answer_as_their_bodies_say(served):
    url, embedder, reranker = served
    status, vectors = call(url, "POST", "/embed", {"inputs": TEXTS})
    assert status == 200 and np.asarray(vectors).shape == (4, 256)
    raw = np.asarray(embedder.predict(TEXTS, verbose=0))
    np.testing.assert_allclose(vectors, _unit(raw), atol=1e-5)
    status, unnormalised = call(url, "POST", "/embed", {"inputs": "good film", "normalize": False})
    np.testing.assert_allclose(unnormalised, raw[:1], atol=1e-4)

    query, passages = "good film", TEXTS[1:]
    want = reranker.rank(query, passages)
    status, ranked = call(url, "POST", "/rerank", {"query": query, "texts": passages, "return_text": True})
    assert status == 200
    assert [r["index"] for r in ranked] == [r["index"] for r in want]
    assert np.allclose([r["score"] for r in ranked], [r["score"] for r in want], atol=1e-5)
    assert [r["text"] for r in ranked] == [passages[r["index"]] for r in ranked]
    status, raw_scores = call(url, "POST", "/rerank", {"query": query, "texts": passages, "raw_scores": True})
    logits = {r["index"]: np.log(r["score"] / (1 - r["score"])) for r in want}
    assert all(abs(r["score"] - logits[r["index"]]) <= 1e-4 and "text" not in r for r in raw_scores)


@pytest.mark.parametrize("path,body,status,words", [
    ("/v1/embeddings", {"input": ["a"]}, 400, '"model" must be a non-empty string'),
    ("/v1/embeddings", {"model": "nobody", "input": ["a"]}, 404, "nobody"),
    ("/v1/embeddings", {"model": "classifier", "input": ["a"]}, 400, "classifier is not one"),
    ("/v1/embeddings", {"model": "embedder", "input": [[5, 6]]}, 400, "token ids are not taken"),
    ("/v1/embeddings", {"model": "embedder", "input": ["a"], "dimensions": 300}, 400, "an int from 1 to this model's"),
    ("/v1/embeddings", {"model": "embedder", "input": ["a"], "encoding_format": "int8"}, 400, '"float" or "base64"'),
    ("/v1/embeddings", {"model": "embedder", "input": []}, 400, "holds no texts"),
    ("/embed", {"inputs": "a", "model": "reranker"}, 400, "reranker is not one"),
    ("/rerank", {"query": "a", "texts": "b"}, 400, '"texts" must be a list of strings'),
    ("/rerank", {"texts": ["b"]}, 400, '"query" must be a non-empty string'),
])
def test_a_bad_request_is_answered_with_what_is_wrong_and_the_server_keeps_serving(served, path, body, status, words):
    url = served[0]
    got, answer = call(url, "POST", path, body)
    assert got == status and words in str(answer), answer
    assert call(url, "POST", "/embed", {"inputs": "good"})[0] == 200
    assert call(url, "POST", "/v1/embeddings", b"{not json")[0] == 400
