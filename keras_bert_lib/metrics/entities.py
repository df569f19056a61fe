"""Entity-level precision, recall and F1 from IOB tag sequences (CoNLL's NER score), equal to
seqeval's default (conlleval) and strict IOB2 modes."""

import collections


def _split(tag):
    """("B" | "I" | "O", entity type) of one tag; raises on anything but IOB tags."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[0] in "BI" and tag[1] == "-":
        return tag[0], tag[2:]
    raise ValueError(f"Tag {tag!r} is not an IOB tag: use 'O', 'B-TYPE' or 'I-TYPE'.")


def to_iob2(tags):
    """IOB1 (or mixed) tags → IOB2: an `I-X` that does not continue an `X` entity becomes `B-X`.

    Example:
        ```python
        from keras_bert_lib.metrics.entities import to_iob2
        to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])   # ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC']
        ```
    """
    out, previous = [], ""
    for tag in tags:
        prefix, kind = _split(tag)
        out.append(f"B-{kind}" if prefix == "I" and previous != kind else tag)
        previous = kind
    return out


def tags_to_entities(tags, strict=False):
    """The entities of one tag sequence as (type, start, end) token spans, end exclusive.

    By default an `I-X` that follows `O` or another type opens an entity, as conlleval and
    seqeval's default mode read IOB1 and IOB2 alike; `strict=True` reads IOB2 strictly, as seqeval's
    `mode="strict"`: an entity is a `B-X` and the `I-X` after it, and a stray `I-X` is no entity.

    Example:
        ```python
        from keras_bert_lib.metrics import tags_to_entities
        tags_to_entities(["B-PER", "I-PER", "O", "I-LOC"])                # [('PER', 0, 2), ('LOC', 3, 4)]
        tags_to_entities(["B-PER", "I-PER", "O", "I-LOC"], strict=True)   # [('PER', 0, 2)]
        ```
    """
    entities, kind, start = [], None, 0
    for i, tag in enumerate([*(tags if strict else to_iob2(tags)), "O"]):
        prefix, tag_kind = _split(tag)
        if kind is not None and not (prefix == "I" and tag_kind == kind):
            entities.append((kind, start, i))
            kind = None
        if prefix == "B":
            kind, start = tag_kind, i
    return entities


def _prf(correct, predicted, actual):
    precision = correct / predicted if predicted else 0.0
    recall = correct / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(y_true, y_pred, mode=None):
    """Micro-averaged entity precision, recall and F1 over sentences of IOB tags, and the same per
    entity type: an entity counts as found only with the same type and the same first and last token.

    Args:
        y_true, y_pred: lists of sentences, each a list of tags ('O', 'B-PER', 'I-PER', …).
        mode: None (conlleval's reading, seqeval's default) or "strict" (IOB2 only).
    Returns:
        {"precision", "recall", "f1", "per_type": {type: {"precision", "recall", "f1", "support"}}};
        a ratio with nothing to divide is 0, as seqeval's.
    Example:
        ```python
        from keras_bert_lib.metrics import entity_scores
        entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]])
        # precision 1.0, recall 0.5, f1 0.667
        ```
    """
    if mode not in (None, "strict"):
        raise ValueError(f"mode={mode!r} is not None or 'strict'.")
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sentences but y_pred has {len(y_pred)}.")
    true_set, pred_set = set(), set()
    for n, (true, pred) in enumerate(zip(y_true, y_pred)):
        if len(true) != len(pred):
            raise ValueError(f"Sentence {n} has {len(true)} gold tags but {len(pred)} predicted ones.")
        true_set |= {(n, *e) for e in tags_to_entities(true, mode == "strict")}
        pred_set |= {(n, *e) for e in tags_to_entities(pred, mode == "strict")}
    correct = true_set & pred_set
    count = collections.Counter
    by_type = [count(e[1] for e in s) for s in (correct, pred_set, true_set)]
    per_type = {kind: {**_prf(by_type[0][kind], by_type[1][kind], by_type[2][kind]), "support": by_type[2][kind]}
                for kind in sorted(set(by_type[1]) | set(by_type[2]))}
    return {**_prf(len(correct), len(pred_set), len(true_set)), "per_type": per_type}
