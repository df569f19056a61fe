"""A HuggingFace cache built by hand, offline: the layout that huggingface_hub's snapshot_download
leaves, for the tests that load checkpoints by Hub id."""

import hashlib
import os
import shutil

COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"  # any 40 hex digits: the snapshot's name


def hf_cache(root, repo, files):
    """The cache huggingface_hub's snapshot_download leaves under `root` for `repo` ({name in the
    repository: local file}): blobs named by content hash, a snapshot of symlinks to them, and
    refs/main naming the snapshot. Returns the repository's folder."""
    folder = root / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(COMMIT)
    for name, source in files.items():
        digest = hashlib.sha256(open(source, "rb").read()).hexdigest()
        blob = folder / "blobs" / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, blob)
        link = folder / "snapshots" / COMMIT / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return folder
