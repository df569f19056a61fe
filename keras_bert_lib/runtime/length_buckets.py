"""Predicting by length: rows sorted by their token count, batched with rows of similar length, each
batch cut to its bucket's width, the results put back in the caller's order.

Real text is short and uneven: on 2,000 movie-review snippets all-MiniLM-L6-v2's tokens per text
have a median of 26 and a maximum of 68, so a batch at a fixed 128 columns is mostly padding.
Padding is masked out of attention and pooling, so cutting it changes no real token's output.
Widths are multiples of `multiple`, so a compiled model sees at most `T / multiple` shapes.
"""

import collections
import itertools
from concurrent.futures import ThreadPoolExecutor

import keras
import numpy as np


def bucket_width(longest, multiple, cap):
    """`longest` rounded up to a multiple of `multiple`, at most `cap`.

    Example:
        ```python
        from keras_bert_lib.runtime.length_buckets import bucket_width
        bucket_width(27, 16, 128)   # 32
        ```
    """
    multiple = multiple or 1
    return int(min(cap, -(-max(int(longest), 1) // multiple) * multiple))


def length_batches(padding_mask, batch_size, multiple=8):
    """[(row indices, width)]: the rows sorted by length (stable), cut into batches of
    `batch_size`, each with the width of its longest row rounded up to `multiple`. The batch
    with fewer rows (the remainder, the shortest rows) comes first and the longest second, then
    the others from short to long: a TensorFlow function traces for the first batch's shape, then
    once for a shape free in both axes, and never again; Keras, which reads a dataset's first two
    batches for its shapes, leaves the width free.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.length_buckets import length_batches
        mask = np.array([[1] * 30 + [0] * 98, [1] * 5 + [0] * 123, [1] * 7 + [0] * 121])
        [(list(rows), width) for rows, width in length_batches(mask, 2)]   # [([1], 8), ([2, 0], 32)]
        ```
    """
    mask = np.asarray(padding_mask)
    lengths = mask.sum(axis=1)
    order = np.argsort(lengths, kind="stable")
    starts = [0, *range(len(order) % batch_size or batch_size, len(order), batch_size)] if len(order) else []
    batches = [(rows, bucket_width(lengths[rows].max(), multiple, mask.shape[1]))
               for rows in (order[a:b] for a, b in zip(starts, [*starts[1:], len(order)]))]
    return batches[:1] + batches[1:][-1:] + batches[1:-1]


def predict_by_length(predict_batch, ids, batch_size, multiple, per_token, fill=0.0, progress=None, streams=1,
                      alone=2):
    """Runs `predict_batch` (an id dict of one batch → its outputs, an array or a dict of them)
    over `ids` by length (`length_batches`) and returns the outputs in `ids`' row order.

    Outputs marked in `per_token` (the flattened outputs' order: True for those with a token
    axis, such as span or tag logits) are padded back to `ids`' width, and hold `fill` at every
    padded position, so that a row's outputs do not depend on the rows batched with it.

    `streams` batches run at once, each on its own thread: `predict_batch` must then be safe to
    call from several threads, as a TensorFlow function is. Each batch's outputs are the same as
    with one stream. The first `alone` batches (`length_batches`' order: the remainder, then the
    longest) run one after the other, so that a TensorFlow function traces (once, or twice for
    Keras' `predict_on_batch`) before any other batch runs beside them; 0 where nothing traces (a
    runtime compiled before the call).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.length_buckets import predict_by_length
        mask = np.array([[1] * 8, [1] + [0] * 7, [1] * 4 + [0] * 4])
        ids = {"token_ids": np.ones((3, 8), "int32"), "padding_mask": mask}
        lengths = predict_by_length(lambda b: b["padding_mask"].sum(1), ids, 2, 4, per_token=[False])   # [8, 1, 4]
        ```
    """
    width = ids["padding_mask"].shape[1]
    rows = len(ids["padding_mask"])
    batches = length_batches(ids["padding_mask"], batch_size, multiple)
    results = None
    cuts = ({k: np.asarray(v)[order, :cut] for k, v in ids.items()} for order, cut in batches)
    for index, ((order, _), out) in enumerate(zip(batches, in_flight(predict_batch, cuts, streams, alone=alone))):
        leaves = [np.asarray(leaf) for leaf in keras.tree.flatten(out)]
        if results is None:
            structure = out
            results = [np.full((rows, width, *leaf.shape[2:]), fill, leaf.dtype) if token
                       else np.empty((rows, *leaf.shape[1:]), leaf.dtype)
                       for leaf, token in zip(leaves, per_token)]
        for result, leaf, token in zip(results, leaves, per_token):
            if token:
                result[order, :leaf.shape[1]] = leaf
            else:
                result[order] = leaf
        if progress is not None:
            progress(index + 1)
    padded = ~np.asarray(ids["padding_mask"]).astype(bool)
    for result, token in zip(results, per_token):
        if token:
            result[padded] = fill
    return keras.tree.pack_sequence_as(structure, results)


def in_flight(function, items, streams, alone=1):
    """`function` of each of `items`, yielded in order, with up to `streams` calls running at once
    on a thread pool; the first `alone` calls run one after the other, before the pool starts,
    and a lone call (a server's batch) runs on the caller's thread, with no pool to start.

    Example:
        ```python
        from keras_bert_lib.runtime.length_buckets import in_flight
        list(in_flight(lambda x: x * x, range(5), streams=2))   # [0, 1, 4, 9, 16]
        ```
    """
    items = iter(items)
    yield from map(function, itertools.islice(items, alone))
    ahead = list(itertools.islice(items, 2))
    items = itertools.chain(ahead, items)
    if streams <= 1 or len(ahead) < 2:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(streams, thread_name_prefix="predict_by_length") as pool:
        running = collections.deque()
        for item in items:
            running.append(pool.submit(function, item))
            if len(running) == streams:
                yield running.popleft().result()
        while running:
            yield running.popleft().result()


class LengthBatches(keras.utils.PyDataset):
    """(ids, targets[, sample_weight]) batches by length (`length_batches`), for `evaluate`: each
    batch cut to its bucket, and so are the targets and weights with a token axis. Metrics are
    sums over rows, so the order changes none of them.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.length_buckets import LengthBatches
        mask = np.array([[1] * 3 + [0] * 29, [1] * 20 + [0] * 12])
        data = LengthBatches({"padding_mask": mask}, np.array([0, 1]), None, batch_size=1)
        [x["padding_mask"].shape for x, _ in (data[0], data[1])]   # [(1, 8), (1, 24)]
        ```
    """

    def __init__(self, ids, targets, sample_weight, batch_size, multiple=8):
        # Two threads read ahead; with them Keras turns tf.data's autotuning off, whose thread held each
        # finished pass for seconds (keras_bert_lib.data.pipeline_options).
        super().__init__(workers=2)
        self.ids, self.targets, self.sample_weight = ids, targets, sample_weight
        self.width = ids["padding_mask"].shape[1]
        rows = len(ids["padding_mask"])
        for what, value in (("targets", targets), ("sample weights", sample_weight)):
            counts = {len(np.asarray(leaf)) for leaf in keras.tree.flatten(value) if value is not None}
            if counts - {rows}:
                raise ValueError(f"{rows} texts (or id rows) but {min(counts - {rows})} {what}: give one per "
                                 "text, in the same order.")
        # Keras reads the first two batches for the dataset's shapes: a short one and the longest,
        # so that the width is left free (one trace; XLA compiles once per width).
        self.batches = length_batches(ids["padding_mask"], batch_size, multiple)

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows, cut = self.batches[index]

        def part(value):
            value = np.asarray(value)
            return value[rows, :cut] if value.ndim >= 2 and value.shape[1] == self.width else value[rows]

        batch = ({k: part(v) for k, v in self.ids.items()}, keras.tree.map_structure(part, self.targets))
        return batch if self.sample_weight is None else (*batch, part(self.sample_weight))
