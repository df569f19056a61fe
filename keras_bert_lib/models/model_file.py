"""A task model's `.keras` file as runs write it."""

import os


def save_model_file(model, path):
    """Saves `model` as the `.keras` file `path`, whole or not at all (written beside, then
    renamed), without its optimizer's state: a fine-tuned model is for predicting and exporting,
    and its Adam slots would double the file (a MiniLM classifier: 91 MB of weights). Its compile
    settings stay, and a later `fit` starts a fresh optimizer. `model.save` keeps the state.

    Example:
        ```python
        import os, tempfile
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.models import save_model_file
        save_model_file(TextClassifier(bert_tiny(num_hidden_layers=1), 2), os.path.join(tempfile.mkdtemp(), "m.keras"))
        ```
    """
    optimizer = getattr(model, "optimizer", None)
    folder, name = os.path.split(os.path.abspath(path))
    partial = os.path.join(folder, f".partial-{name}")
    if optimizer is not None and optimizer.built:  # an unbuilt copy: its config without its slots
        model.optimizer = optimizer.__class__.from_config(optimizer.get_config())
    try:
        model.save(partial)
    finally:
        if optimizer is not None:
            model.optimizer = optimizer
    os.replace(partial, path)
