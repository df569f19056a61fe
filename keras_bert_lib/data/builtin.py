"""Data that ships with the package: the quick-start's movie reviews."""

import os


def movie_reviews():
    """{"train": path, "validation": path}: 400 and 200 labelled movie-review snippets (CSV,
    `text` and `label`: fresh or rotten) that ship with the package, so that `keras-bert
    quickstart` runs from a wheel, outside any checkout. Source and licence: the folder's README.

    Example:
        ```python
        from keras_bert_lib.data import movie_reviews, read_examples
        train = read_examples(movie_reviews()["train"])
        len(train), sorted(set(train.labels))   # (400, ['fresh', 'rotten'])
        ```
    """
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "movie_reviews")
    return {split: os.path.join(folder, f"{split}.csv") for split in ("train", "validation")}
