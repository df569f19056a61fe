"""ModernBERT-base's shape on this CPU: ours against transformers + PyTorch on the same weights, on
short real text (embedding and classification) and on one long document.

    python -m bench.modernbert_speed [--texts 400] [--rounds 3] [--lengths 512,1024,2048,4096]

The model is ModernBERT-base's shape (22 layers, H 768, global attention every third layer, a
128-token local window elsewhere) with transformers' random initialisation, saved once under
bench/.cache with a byte-level BPE tokenizer.json (NFC, [CLS] … [SEP]) learned on the review
snippets, so that both sides read the same folder; the published weights would time the same.
Short text: `--texts` held-out review snippets (median about 30 tokens), batch 32, cut at 128:
ours by `SentenceEmbedder.predict` (mean pooling; its default dtype, and float32) and
`TextClassifier.predict` ([CLS]), against transformers padding each batch to its longest in the
texts' order (SDPA attention), mean-pooled, or its `ModernBertForSequenceClassification`.
texts/s, the ratio to transformers, and the smallest cosine of ours (float32) to its vectors.
Long: one document of reviews joined, cut at each of `--lengths` tokens, through the encoder alone
(ours compiled in float32; transformers with SDPA): seconds, milliseconds per 1,000 tokens (flat
where the cost is linear in the tokens) and the largest difference of the outputs.
Interleaved rounds, medians.
"""

import argparse
import os

import numpy as np

from bench.common import CACHE, cosine, cpu_model, interleaved_medians, snippets, write_results

FOLDER = os.path.join(CACHE, "modernbert_base_random")


def make_folder(train_texts):
    """The checkpoint folder both sides read: transformers' random ModernBERT-base, a learned tokenizer."""
    if os.path.isfile(os.path.join(FOLDER, "model.safetensors")):
        return
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(train_texts, trainers.BpeTrainer(
        vocab_size=8000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    ids = {t: tokenizer.token_to_id(t) for t in specials}
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, cls_token="[CLS]", sep_token="[SEP]",
                                                pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")
    config = transformers.ModernBertConfig(pad_token_id=ids["[PAD]"], cls_token_id=ids["[CLS]"],
                                           sep_token_id=ids["[SEP]"], bos_token_id=ids["[CLS]"],
                                           eos_token_id=ids["[SEP]"], classifier_pooling="cls")
    torch.manual_seed(0)
    model = transformers.ModernBertModel(config).eval()
    os.makedirs(FOLDER, exist_ok=True)
    fast.save_pretrained(FOLDER)
    model.save_pretrained(FOLDER)


def short_text(texts, batch, rounds):
    import torch
    import transformers

    from keras_bert_lib import SentenceEmbedder, TextClassifier

    ours = SentenceEmbedder.from_checkpoint(FOLDER, sequence_length=128)
    float32 = SentenceEmbedder.from_checkpoint(FOLDER, sequence_length=128)
    float32.inference_dtype = None
    classifier = TextClassifier.from_checkpoint(FOLDER, num_classes=2, sequence_length=128)
    tokenizer = transformers.AutoTokenizer.from_pretrained(FOLDER)
    model = transformers.ModernBertModel.from_pretrained(FOLDER, attn_implementation="sdpa").eval()
    theirs_classifier = transformers.ModernBertForSequenceClassification.from_pretrained(
        FOLDER, num_labels=2, attn_implementation="sdpa").eval()

    def hf(classify):
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                inputs = tokenizer(texts[i:i + batch], padding=True, truncation=True, max_length=128,
                                   return_tensors="pt")
                if classify:
                    out.append(theirs_classifier(**inputs).logits.numpy())
                    continue
                states = model(**inputs).last_hidden_state
                mask = inputs["attention_mask"][..., None].float()
                out.append(((states * mask).sum(1) / mask.sum(1)).numpy())
        return np.concatenate(out)

    default = ours.inference_model().encoder.layers_dtype_policy.name
    variants = {
        f"embed: ours (default: {default})": lambda: ours.predict(texts, batch_size=batch, verbose=0),
        "embed: ours float32": lambda: float32.predict(texts, batch_size=batch, verbose=0),
        "embed: transformers (SDPA)": lambda: hf(False),
        f"classify: ours (default: {classifier.inference_model().encoder.layers_dtype_policy.name})":
            lambda: classifier.predict(texts, batch_size=batch, verbose=0),
        "classify: transformers (SDPA)": lambda: hf(True),
    }
    for fn in variants.values():  # traced and compiled before the clock
        fn()
    seconds = interleaved_medians(variants, rounds)
    vectors = float32.predict(texts, batch_size=batch, verbose=0)
    theirs = hf(False)
    rows = []
    for name, s in seconds.items():
        peer = seconds["embed: transformers (SDPA)" if name.startswith("embed") else "classify: transformers (SDPA)"]
        row = {"variant": name, "texts_per_s": round(len(texts) / s, 1), "ratio_to_transformers": round(peer / s, 2)}
        if name == "embed: ours float32":
            row["min_cosine_to_transformers"] = round(cosine(vectors, theirs), 6)
        rows.append(row)
    return rows


def long_document(texts, lengths, rounds):
    import torch
    import transformers

    from keras_bert_lib import load_checkpoint, load_preprocessor

    encoder = load_checkpoint(FOLDER)
    tokenizer = load_preprocessor(FOLDER, sequence_length=max(lengths)).tokenizer
    model = transformers.ModernBertModel.from_pretrained(FOLDER, attn_implementation="sdpa").eval()
    ids = np.concatenate([np.asarray(t) for t in tokenizer(texts).to_list()])
    rows = []
    for length in lengths:
        body = ids[:length - 2]
        tokens = np.concatenate([[tokenizer.cls_id], body, [tokenizer.sep_id]]).astype("int32")[None]
        batch = {"token_ids": tokens, "segment_ids": np.zeros_like(tokens), "padding_mask": np.ones_like(tokens)}

        def theirs():
            with torch.inference_mode():
                return model(input_ids=torch.from_numpy(tokens.astype("int64"))).last_hidden_state.numpy()

        ours = encoder.predict_on_batch(batch)["sequence_output"]  # compiled before the clock
        gap = float(np.max(np.abs(ours - theirs())))
        seconds = interleaved_medians({"ours": lambda: encoder.predict_on_batch(batch), "transformers": theirs},
                                      rounds)
        rows.append({"tokens": length, "ours_s": round(seconds["ours"], 3),
                     "transformers_s": round(seconds["transformers"], 3),
                     "ours_ms_per_1k_tokens": round(1000 * seconds["ours"] / length * 1000, 1),
                     "transformers_ms_per_1k_tokens": round(1000 * seconds["transformers"] / length * 1000, 1),
                     "ratio_to_transformers": round(seconds["transformers"] / seconds["ours"], 2),
                     "max_abs_difference": float(f"{gap:.2e}")})
        print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400, help="held-out review snippets timed (default: 400)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, medians (default: 3)")
    parser.add_argument("--batch", type=int, default=32, help="texts per batch (default: 32)")
    parser.add_argument("--lengths", default="512,1024,2048,4096",
                        help="the long document's lengths in tokens (default: 512,1024,2048,4096)")
    args = parser.parse_args()
    train, held_out = snippets(10808)
    make_folder([row["text"] for row in train])
    texts = [row["text"] for row in held_out][:args.texts]
    print(cpu_model(), flush=True)
    rows = [{"part": "short", **r} for r in short_text(texts, args.batch, args.rounds)]
    for row in rows:
        print(row, flush=True)
    lengths = [int(n) for n in args.lengths.split(",")]
    rows += [{"part": "long", **r} for r in long_document([r["text"] for r in train], lengths, args.rounds)]
    write_results(__file__, rows, texts=len(texts), batch=args.batch)


if __name__ == "__main__":
    main()
