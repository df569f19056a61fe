"""A checkpoint's tensors by name, each read from its file only when it is used: the names and
shapes come from the file's index (a safetensors header, a TF checkpoint's index), so a file
whose config or tensors do not fit is refused before its weights are in memory."""

import collections.abc
import math


class LazyTensors(collections.abc.Mapping):
    """{name: array} where `load(name)` reads an array when it is first asked for (then kept), and
    `shape(name)` and `size` come from `shapes` ({name: shape}) without reading anything.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.checkpoints.lazy_tensors import LazyTensors
        tensors = LazyTensors({"w": (2, 3)}, lambda name: np.zeros((2, 3), "float32"))
        tensors.shape("w"), tensors.size   # ((2, 3), 6): nothing read yet
        ```
    """

    def __init__(self, shapes, load):
        self._shapes, self._load, self._read = {k: tuple(v) for k, v in shapes.items()}, load, {}

    def __getitem__(self, name):
        if name not in self._shapes:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = self._load(name)
        return self._read[name]

    def __iter__(self):
        return iter(self._shapes)

    def __len__(self):
        return len(self._shapes)

    def shape(self, name):
        """The shape of tensor `name`, from the index."""
        return self._shapes[name]

    @property
    def size(self):
        """How many values the file holds, over all its tensors."""
        return sum(math.prod(shape) for shape in self._shapes.values())

    def renamed(self, rename):
        """The same tensors under `rename(name)` (each read from the file by its own name)."""
        names = {rename(name): name for name in self._shapes}
        return LazyTensors({new: self._shapes[old] for new, old in names.items()},
                           lambda new: self[names[new]])


def shape_of(tensors, name):
    """The shape of `tensors[name]` without reading it where `tensors` is a `LazyTensors`.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.checkpoints.lazy_tensors import shape_of
        shape_of({"w": np.zeros((2, 3))}, "w")   # (2, 3)
        ```
    """
    return tensors.shape(name) if isinstance(tensors, LazyTensors) else tuple(tensors[name].shape)


def size_of(tensors):
    """How many values `tensors` (a `LazyTensors` or a dict of arrays) hold in all.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.checkpoints.lazy_tensors import size_of
        size_of({"w": np.zeros((2, 3)), "b": np.zeros(3)})   # 9
        ```
    """
    return tensors.size if isinstance(tensors, LazyTensors) else sum(int(v.size) for v in tensors.values())
