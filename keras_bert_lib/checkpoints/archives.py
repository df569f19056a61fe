"""Checkpoints published as archives at a URL (Google's BERT and ALBERT zip and tar.gz files):
downloaded once into the Keras cache, resumed where a cut left off, checked, unpacked, reused.

`fetch_archive(url)` is what `resolve_checkpoint` calls for a URL or a known Google name
(`GOOGLE_CHECKPOINTS`). The download goes to `<KERAS_HOME>/keras_bert_lib/<name>.partial`; a cut
(a dropped connection, Ctrl-C) leaves that file, and the next call asks the server for the rest
(an HTTP Range request) instead of starting again. A finished file is checked against its
SHA-256 where one is given, then unpacked into a temporary folder that is renamed into place
whole: the cache holds a checkpoint folder or nothing, never half of one. A corrupt archive is
deleted with the error.
"""

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile

from keras_bert_lib.atomic_write import default_mode

_GOOGLE = "https://storage.googleapis.com/bert_models/"
# The 24 small BERTs (2020); their L-12/H-768 is BERT-Base, kept at its 2018 address below.
_SMALL = [(layers, width) for layers in (2, 4, 6, 8, 10, 12) for width in (128, 256, 512, 768)
          if (layers, width) != (12, 768)]
# Google's published checkpoints by their own names (google-research/bert and google-research/albert
# READMEs); the folder names say the shape: L layers, H width, A heads.
GOOGLE_CHECKPOINTS = {
    **{f"{case}_L-12_H-768_A-12": f"{_GOOGLE}2018_10_18/{case}_L-12_H-768_A-12.zip" for case in ("uncased", "cased")},
    **{f"{case}_L-24_H-1024_A-16": f"{_GOOGLE}2018_10_18/{case}_L-24_H-1024_A-16.zip" for case in ("uncased", "cased")},
    **{name: f"{_GOOGLE}2020_02_20/{name}.zip"
       for name in (f"uncased_L-{layers}_H-{width}_A-{width // 64}" for layers, width in _SMALL)},
    **{f"albert_{size}_v2": f"https://storage.googleapis.com/albert_models/albert_{size}_v2.tar.gz"
       for size in ("base", "large", "xlarge", "xxlarge")},
}
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


def is_archive_url(name):
    """Whether `name` is an http(s) URL of a .zip or .tar.gz file.

    Example:
        ```python
        from keras_bert_lib.checkpoints.archives import is_archive_url
        is_archive_url("https://storage.googleapis.com/albert_models/albert_base_v2.tar.gz")   # True
        ```
    """
    name = os.fspath(name)
    return name.startswith(("http://", "https://")) and name.split("?")[0].endswith(ARCHIVE_SUFFIXES)


def cache_folder():
    """Where archives are downloaded and unpacked: `<KERAS_HOME or ~/.keras>/keras_bert_lib`.

    Example:
        ```python
        from keras_bert_lib.checkpoints.archives import cache_folder
        cache_folder()   # e.g. /home/me/.keras/keras_bert_lib
        ```
    """
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "keras_bert_lib")


def fetch_archive(url, sha256=None, timeout=60):
    """The unpacked checkpoint folder of the archive at `url`: from the cache when it is there
    (no request), else downloaded (resuming a `.partial` file left by a cut), checked against
    `sha256` when given, unpacked whole, and cached. Offline (`HF_HUB_OFFLINE=1`, the one switch
    for every name) an archive not in the cache fails at once, saying how to fill the cache.

    Raises:
        ValueError: the download failed (with what to do), the hash differs, or the archive is
            corrupt or holds no checkpoint; the bad file is deleted.
    Example:
        ```python
        from keras_bert_lib.checkpoints.archives import fetch_archive
        # folder = fetch_archive("https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-2_H-128_A-2.zip")
        ```
    """
    name = os.path.basename(url.split("?")[0])
    stem = next(name[:-len(s)] for s in ARCHIVE_SUFFIXES if name.endswith(s))
    root = cache_folder()
    unpacked = os.path.join(root, stem)
    if os.path.isdir(unpacked):
        return _checkpoint_folder(unpacked, url)
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ValueError(f"{url}: not in the cache ({unpacked}) and HF_HUB_OFFLINE is set. On a connected machine "
                         f"run `keras-bert download {url}`, then copy {root} here (or point KERAS_HOME at it).")
    os.makedirs(root, exist_ok=True)
    archive = os.path.join(root, name)
    if not os.path.isfile(archive):
        _download(url, archive, timeout)
    if sha256 is not None:
        digest = _sha256(archive)
        if digest != sha256:
            os.remove(archive)
            raise ValueError(f"{url}: SHA-256 {digest} is not the expected {sha256}; the file was deleted. Try "
                             "again; if it persists, the file at that URL has changed.")
    staging = tempfile.mkdtemp(prefix=f".{stem}-", dir=root)
    try:
        _unpack(archive, staging)
        _checkpoint_folder(staging, url)
    except (ValueError, zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        shutil.rmtree(staging, ignore_errors=True)
        os.remove(archive)
        raise ValueError(f"{url}: the archive is corrupt or holds no checkpoint ({e}); it was deleted from the "
                         "cache: run the same call again to download it afresh.") from None
    default_mode(staging)  # mkdtemp's 0700: others on the machine share the cache
    os.replace(staging, unpacked)  # whole, or not at all
    os.remove(archive)  # the unpacked folder is what is kept
    return _checkpoint_folder(unpacked, url)


def _download(url, target, timeout):
    """Downloads `url` to `target` through `target.partial`, resuming it when it exists; a Keras
    progress bar shows the bytes."""
    import keras

    partial = target + ".partial"
    have = os.path.getsize(partial) if os.path.isfile(partial) else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            if have and response.status != 206:  # the server sent the whole file again
                have = 0
            length = response.headers.get("Content-Length")
            total = have + int(length) if length is not None else None
            bar = keras.utils.Progbar(total, unit_name="byte")
            bar.update(have)
            with open(partial, "ab" if have else "wb") as f:
                while chunk := response.read(1 << 20):
                    f.write(chunk)
                    have += len(chunk)
                    bar.update(have)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # the partial file is already whole
            os.replace(partial, target)
            return
        raise ValueError(f"{url}: HTTP {e.code} {e.reason}.") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        kept = f" ({have} bytes kept in {partial}: the same call resumes)" if os.path.isfile(partial) else ""
        raise ValueError(f"{url}: the download failed: {getattr(e, 'reason', e)}{kept}. With no network, fetch it "
                         f"on a connected machine and copy {cache_folder()} here.") from None
    if total is not None and have < total:
        raise ValueError(f"{url}: the connection closed after {have} of {total} bytes ({partial} kept: the same "
                         "call resumes).")
    os.replace(partial, target)


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _unpack(archive, folder):
    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            bad = z.testzip()
            if bad is not None:
                raise ValueError(f"{bad} fails its CRC check")
            z.extractall(folder)
    else:
        with tarfile.open(archive, "r:gz") as t:
            t.extractall(folder, filter="data")


def _checkpoint_folder(folder, url):
    """The folder under `folder` that holds bert_config.json or albert_config.json (Google's
    archives hold one folder named after the model; ALBERT's config comes with a 30k SentencePiece
    vocabulary that this library does not read)."""
    for here, _, files in sorted(os.walk(folder)):
        if "bert_config.json" in files or "albert_config.json" in files or "config.json" in files:
            return here
    raise ValueError(f"{url} holds no bert_config.json, albert_config.json or config.json")
