"""atomic_write_text: the whole new file or the old one, with the mode a plain open() gives."""

import os
import stat

import pytest

from keras_bert_lib.atomic_write import atomic_write_text


def test_a_new_file_gets_the_mode_open_would_give_not_mkstemps_private_one(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(str(tmp_path / "a.png"), b"\x89PNG")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.png").st_mode) == 0o644
    assert (tmp_path / "a.png").read_bytes() == b"\x89PNG"


def test_a_replaced_file_keeps_its_mode_and_a_failed_write_leaves_the_old_text(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("old")
    os.chmod(path, 0o600)
    atomic_write_text(str(path), "new")
    assert path.read_text() == "new" and stat.S_IMODE(os.stat(path).st_mode) == 0o600

    with pytest.raises(TypeError):
        atomic_write_text(str(path), 42)  # not text: nothing is written
    assert path.read_text() == "new" and os.listdir(tmp_path) == ["notes.txt"]
