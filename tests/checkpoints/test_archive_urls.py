"""Checkpoints at a URL, as Google publishes BERT and ALBERT: a zip of a TF1 checkpoint written by
our own `save_checkpoint(format="tf1")`, served from 127.0.0.1 by a server that honours Range
requests and can cut a response halfway. Downloaded once, resumed after the cut, checked against
its SHA-256, unpacked whole, read from the cache with no request; a corrupt archive is refused and
not left in the cache."""

import hashlib
import http.server
import os
import threading
import zipfile

import numpy as np
import pytest

from keras_bert_lib.checkpoints.archives import GOOGLE_CHECKPOINTS, fetch_archive, is_archive_url


class _Server(http.server.ThreadingHTTPServer):
    """Serves `files` {path: bytes}; `cut` {path: bytes to send before closing} cuts the next
    response to that path once; `requests` records (path, Range header)."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files, self.cut, self.requests = {}, {}, []


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        send = body[start:]
        if self.path in server.cut:
            send = send[:server.cut.pop(self.path)]
        self.wfile.write(send)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """(zip bytes, the encoder it holds): Google's layout, one folder named after the model."""
    from keras_bert_lib import bert_tiny, save_checkpoint

    root = tmp_path_factory.mktemp("google")
    encoder = bert_tiny(num_hidden_layers=1, vocab_size=40, hidden_act="gelu_tanh")  # Google's GELU
    folder = root / "uncased_L-1_H-128_A-2"
    save_checkpoint(encoder, folder, format="tf1")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                                                + [f"w{i}" for i in range(35)]) + "\n")
    path = root / "uncased_L-1_H-128_A-2.zip"
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(folder.iterdir()):
            z.write(file, f"uncased_L-1_H-128_A-2/{file.name}")
    return path.read_bytes(), encoder


@pytest.fixture(autouse=True)
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the server is on loopback; tests/conftest.py sets it
    return tmp_path / "keras_home" / "keras_bert_lib"


def _url(server, name="uncased_L-1_H-128_A-2.zip"):
    return f"http://127.0.0.1:{server.server_address[1]}/{name}"


def test_downloaded_once_unpacked_whole_and_read_from_the_cache(server, archive, keras_home):
    from keras_bert_lib import load_checkpoint

    body, encoder = archive
    server.files["/uncased_L-1_H-128_A-2.zip"] = body
    url = _url(server)
    folder = fetch_archive(url, sha256=hashlib.sha256(body).hexdigest())
    assert folder == str(keras_home / "uncased_L-1_H-128_A-2" / "uncased_L-1_H-128_A-2")
    assert sorted(os.listdir(keras_home)) == ["uncased_L-1_H-128_A-2"]  # no archive, no partial, no staging
    loaded = load_checkpoint(url)  # the URL itself, through read_checkpoint's resolver
    for a, b in zip(loaded.weights, encoder.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=a.path)
    assert len(server.requests) == 1  # the second load came from the cache


@pytest.mark.slow
def test_a_cut_download_resumes_where_it_stopped(server, archive, keras_home):
    body, _ = archive
    server.files["/uncased_L-1_H-128_A-2.zip"] = body
    half = len(body) // 2
    server.cut["/uncased_L-1_H-128_A-2.zip"] = half
    with pytest.raises(ValueError, match="the same call resumes"):
        fetch_archive(_url(server))
    partial = keras_home / "uncased_L-1_H-128_A-2.zip.partial"
    assert partial.stat().st_size == half
    folder = fetch_archive(_url(server), sha256=hashlib.sha256(body).hexdigest())
    assert os.path.isfile(os.path.join(folder, "bert_config.json"))
    assert server.requests[-1] == ("/uncased_L-1_H-128_A-2.zip", f"bytes={half}-")  # only the rest was asked for


@pytest.mark.slow
def test_a_wrong_hash_is_refused_and_deleted(server, archive, keras_home):
    body, _ = archive
    server.files["/uncased_L-1_H-128_A-2.zip"] = body
    with pytest.raises(ValueError, match="SHA-256 .* is not the expected 0000"):
        fetch_archive(_url(server), sha256="0" * 64)
    assert os.listdir(keras_home) == []


@pytest.mark.slow
def test_a_corrupt_archive_is_refused_and_not_left_in_the_cache(server, archive, keras_home):
    body, _ = archive
    server.files["/broken.zip"] = body[: len(body) // 3] + b"\0" * 1000  # a whole response, bad bytes
    with pytest.raises(ValueError, match="the archive is corrupt or holds no checkpoint.*run the same call again"):
        fetch_archive(_url(server, "broken.zip"))
    assert os.listdir(keras_home) == []


def test_an_unreachable_url_says_what_to_do(keras_home):
    with pytest.raises(ValueError, match="the download failed.*copy .*keras_bert_lib here"):
        fetch_archive("http://127.0.0.1:9/missing.zip", timeout=5)  # port 9 (discard): refused at once


def test_googles_names_are_its_published_urls():
    assert len(GOOGLE_CHECKPOINTS) == 31  # BERT-Base/Large cased and uncased, 23 more small BERTs, ALBERT v2 ×4
    assert GOOGLE_CHECKPOINTS["uncased_L-12_H-768_A-12"] == \
        "https://storage.googleapis.com/bert_models/2018_10_18/uncased_L-12_H-768_A-12.zip"
    assert GOOGLE_CHECKPOINTS["uncased_L-4_H-256_A-4"] == \
        "https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-4_H-256_A-4.zip"
    assert GOOGLE_CHECKPOINTS["albert_base_v2"] == "https://storage.googleapis.com/albert_models/albert_base_v2.tar.gz"
    assert all(is_archive_url(url) for url in GOOGLE_CHECKPOINTS.values())
    assert not is_archive_url("https://example.org/model") and not is_archive_url("folder/model.zip")


@pytest.mark.slow
def test_offline_an_uncached_archive_fails_at_once(server, keras_home, monkeypatch):
    import time

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ValueError, match="not in the cache .* HF_HUB_OFFLINE is set.*keras-bert download"):
        fetch_archive(_url(server))
    assert time.perf_counter() - start < 1.0 and server.requests == [] and not keras_home.exists()
