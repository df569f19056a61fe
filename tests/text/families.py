"""Checkpoint folders of the families whose tokenizers are not WordPiece, made here: a vocabulary
trained on the movie reviews (sentencepiece's and tokenizers' trainers), HuggingFace's tokenizer
built from it (what `save_pretrained` writes), and a small random transformers model.

transformers 5 cannot convert a SentencePiece model to a fast tokenizer beside TensorFlow's
protobuf (sentencepiece's generated module wants a newer runtime), so the references are built
as its converters build them: the pieces and scores, and the normaliser's precompiled map read
with transformers' own protobuf module.
"""

import csv
import io
import json
import os
from importlib import resources

import numpy as np

# Lines with what English reviews lack: other scripts, accents, full-width forms, odd spaces.
WORLD = ["Café au lait, naïve façade, crème brûlée.", "Ελληνικά: καλημέρα κόσμε.", "Русский текст: привет, мир!",
         "東京は日本の首都です。", "ＦＵＬＬ ｗｉｄｔｈ letters", "Zürich, Köln und München.", "¿Qué tal? ¡Muy bien!",
         "naïve coöperation", "Σίσυφος ΣΟΦΟΣ", "x\u00a0y\u2003z\u3000w"]


def training_lines():
    with resources.files("keras_bert_lib.data").joinpath("movie_reviews/train.csv").open(encoding="utf-8") as f:
        reviews = [row["text"] for row in csv.DictReader(f)]
    return reviews + WORLD * 5


def _proto(data):
    from transformers.utils import sentencepiece_model_pb2_new as pb

    model = pb.ModelProto()
    model.ParseFromString(data)
    return model


def sentencepiece_model(model_type, albert, vocab_size=700):
    import sentencepiece as spm

    out = io.BytesIO()
    ids = (dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"]) if albert
           else dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1))  # fairseq's models: <unk> <s> </s>
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=out,
                                   vocab_size=vocab_size, model_type=model_type, minloglevel=2,
                                   character_coverage=1.0, **ids)
    return out.getvalue()


def albert_tokenizer(model_bytes, **settings):
    from transformers import AlbertTokenizer

    proto = _proto(model_bytes)
    return AlbertTokenizer(vocab=[(p.piece, p.score) for p in proto.pieces],
                           _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap, **settings)


def xlmr_tokenizer(model_bytes):
    """fairseq's ids: <s> <pad> </s> <unk>, then SentencePiece's pieces from its id 3, <mask> last."""
    from transformers import XLMRobertaTokenizer

    proto = _proto(model_bytes)
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[3:]] + [("<mask>", 0.0)]
    return XLMRobertaTokenizer(vocab=vocab)


def roberta_tokenizer(folder):
    """A byte-level BPE learned by `tokenizers`, as RoBERTa's vocab.json + merges.txt and tokenizer.json."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    learner = ByteLevelBPETokenizer()
    learner.train_from_iterator(training_lines(), vocab_size=900, min_frequency=2, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    learner.save_model(str(folder))
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f.read().splitlines()[1:] if line]
    return RobertaTokenizer(vocab=vocab, merges=merges)


def wordpiece_tokenizer(folder):
    """A WordPiece vocabulary learned by `tokenizers` (uncased, BERT's rules) as vocab.txt, read by
    transformers' ElectraTokenizerFast."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import ElectraTokenizerFast

    learner = BertWordPieceTokenizer(lowercase=True)
    learner.train_from_iterator(training_lines(), vocab_size=900, min_frequency=2, show_progress=False)
    learner.save_model(str(folder))
    return ElectraTokenizerFast.from_pretrained(str(folder), do_lower_case=True)


def modernbert_tokenizer(folder):
    """ModernBERT's kind of tokenizer.json, learned by `tokenizers`: NFC, GPT-2's byte-level BPE,
    [CLS] A [SEP] (B [SEP]) with BERT's special tokens, read by transformers' fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(training_lines(), trainers.BpeTrainer(
        vocab_size=900, min_frequency=2, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")


def modernbert_model(vocab_size, seed=0, masked_lm=False):
    """A small random ModernBERT: 4 layers (global, local, local, global), a window of 4 positions
    either side (local_attention 8) so that it matters on a review, every weight random."""
    import torch
    import transformers

    config = transformers.ModernBertConfig(
        vocab_size=vocab_size, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=24,
        max_position_embeddings=512, local_attention=8, global_attn_every_n_layers=3, pad_token_id=3,
        bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)
    torch.manual_seed(seed)
    model = (transformers.ModernBertForMaskedLM if masked_lm else transformers.ModernBertModel)(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


def deberta_tokenizer(folder):
    """DeBERTa-v3's tokenizer as transformers 5 builds it from an spm.model's pieces (a SentencePiece
    unigram learned here, [CLS] [SEP] [MASK] among its control pieces); its tokenizer.json saved."""
    from transformers import DebertaV2Tokenizer

    proto = _proto(sentencepiece_model("unigram", albert=True))
    return DebertaV2Tokenizer(vocab=[(p.piece, p.score) for p in proto.pieces], unk_token="<unk>",
                              pad_token="<pad>")


def deberta_model(vocab_size, seed=0, masked_lm=False):
    """A small random DeBERTa-v3: 8 relative buckets each way reaching 32 positions, so that texts
    longer than 4 tokens meet the log buckets; every weight random."""
    import torch
    import transformers

    config = transformers.DebertaV2Config(
        vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=128, relative_attention=True, position_buckets=8, max_relative_positions=32,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
        type_vocab_size=0, layer_norm_eps=1e-7, pad_token_id=0)
    torch.manual_seed(seed)
    model = (transformers.DebertaV2ForMaskedLM if masked_lm else transformers.DebertaV2Model)(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


def random_model(kind, vocab_size, seed=0):
    """A small transformers model of `kind` ("albert", "roberta", "xlm-roberta", "bert", "electra"),
    every weight drawn at random so each matters."""
    import torch
    import transformers

    small = dict(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, hidden_act="gelu")
    config = {"albert": lambda: transformers.AlbertConfig(**small, embedding_size=8, max_position_embeddings=128,
                                                          pad_token_id=0),
              "roberta": lambda: transformers.RobertaConfig(**small, max_position_embeddings=130, type_vocab_size=1,
                                                            pad_token_id=1),
              "xlm-roberta": lambda: transformers.XLMRobertaConfig(**small, max_position_embeddings=130,
                                                                   type_vocab_size=1, pad_token_id=1),
              "bert": lambda: transformers.BertConfig(**small, max_position_embeddings=128, pad_token_id=1),
              "electra": lambda: transformers.ElectraConfig(**small, embedding_size=8, max_position_embeddings=128),
              }[kind]()
    torch.manual_seed(seed)
    model = transformers.AutoModel.from_config(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


def make_folder(folder, family):
    """A checkpoint folder of `family` ("albert", "xlm-roberta", "roberta", "electra", "modernbert", "deberta",
    "bert+xlmr": a BERT model behind XLM-R's tokenizer, as paraphrase-multilingual-MiniLM-L12-v2); returns (HF
    tokenizer, model)."""
    os.makedirs(folder, exist_ok=True)
    if family == "albert":
        data = sentencepiece_model("unigram", albert=True)
        (folder / "spiece.model").write_bytes(data)
        tokenizer = albert_tokenizer(data)
    elif family in ("xlm-roberta", "bert+xlmr"):
        data = sentencepiece_model("bpe" if family == "xlm-roberta" else "unigram", albert=False)
        (folder / "sentencepiece.bpe.model").write_bytes(data)
        tokenizer = xlmr_tokenizer(data)
    elif family == "electra":
        tokenizer = wordpiece_tokenizer(folder)
    elif family == "modernbert":
        tokenizer = modernbert_tokenizer(folder)
    elif family == "deberta":
        tokenizer = deberta_tokenizer(folder)
    else:
        tokenizer = roberta_tokenizer(folder)
    tokenizer.save_pretrained(str(folder))
    special = {"modernbert": modernbert_model, "deberta": deberta_model}
    model = (special[family](len(tokenizer)) if family in special
             else random_model(family.split("+")[0], len(tokenizer)))
    model.save_pretrained(str(folder))
    return tokenizer, model


def hf_outputs(tokenizer, model, first, second=None, length=64):
    """transformers' sequence output (B, T, H) and mask for texts (or pairs), padded to the longest."""
    import torch

    segments = type(tokenizer).__name__ == "AlbertTokenizer"  # ALBERT's pairs have segments 0/1; fairseq's one
    batch = tokenizer(first, second, padding=True, truncation=True, max_length=length, return_tensors="pt",
                      return_token_type_ids=segments)
    with torch.no_grad():
        out = model(**batch).last_hidden_state.numpy()
    return out, batch["attention_mask"].numpy().astype(bool), batch


def max_difference(ours, theirs, mask):
    width = mask.shape[1]
    return float(np.max(np.abs(np.asarray(ours)[:, :width][mask] - theirs[mask])))
