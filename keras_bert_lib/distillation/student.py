"""student_from_teacher: a shallower encoder initialised from chosen layers of a deeper one (DistilBERT)."""

from keras_bert_lib.layers.initializers import assigned_next
from keras_bert_lib.models.encoder import BertEncoder

DISTILBERT_LAYERS = (0, 2, 4, 7, 9, 11)  # the 6 of BERT-Base's 12 layers DistilBERT starts from


def spread_layers(num_layers, keep=None):
    """`keep` layer indices spread evenly over `num_layers`, the first and the last among them
    (default: half the layers; 12 → DistilBERT's 0, 2, 4, 7, 9, 11; 6 → 0, 2, 5).

    Example:
        ```python
        from keras_bert_lib.distillation.student import spread_layers
        spread_layers(12)   # [0, 2, 4, 7, 9, 11]
        ```
    """
    keep = max(1, num_layers // 2) if keep is None else keep
    if not 1 <= keep <= num_layers:
        raise ValueError(f"keep={keep} layers of {num_layers}: keep between 1 and {num_layers}.")
    if keep == 1:
        return [num_layers - 1]
    return [round(i * (num_layers - 1) / (keep - 1)) for i in range(keep)]


def check_layers(layers, num_layers):
    """`layers` as a list of ints, checked to be increasing indices of `num_layers` (None: `spread_layers`).

    Example:
        ```python
        from keras_bert_lib.distillation.student import check_layers
        check_layers([0, 2, 5], 6)   # [0, 2, 5]
        ```
    """
    layers = spread_layers(num_layers) if layers is None else [int(i) for i in layers]
    if not layers or layers != sorted(set(layers)) or not 0 <= layers[0] <= layers[-1] < num_layers:
        raise ValueError(f"layers={layers} must be increasing indices of the teacher's {num_layers} "
                         f"layers (0 … {num_layers - 1}), e.g. DistilBERT's {list(DISTILBERT_LAYERS)}.")
    return layers


def student_from_teacher(teacher, layers=None):
    """A BertEncoder with `len(layers)` blocks, block i a copy of the teacher's block `layers[i]`,
    and the teacher's embeddings, pooler and every other setting (Sanh et al., 2019, §3: "taking
    one layer out of two"; their 6-layer DistilBERT took layers 0, 2, 4, 7, 9 and 11).

    Args:
        teacher: a BertEncoder with one block per layer (not ALBERT's shared blocks).
        layers: increasing teacher layer indices (default: `spread_layers`, half of them, which
            for a 12-layer teacher are DistilBERT's).
    Returns:
        BertEncoder: the student, its weights copies (training it leaves the teacher as it was).
    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.distillation import student_from_teacher
        teacher = bert_tiny(num_hidden_layers=4)
        student = student_from_teacher(teacher, layers=[0, 3])   # 2 layers
        ```
    """
    config = teacher.config
    if config.num_groups != config.num_hidden_layers or config.inner_group_num != 1:
        raise ValueError("The teacher shares its blocks across layers (ALBERT): there is no layer to copy on its "
                         "own; distil from a BERT-style teacher.")
    layers = check_layers(layers, config.num_hidden_layers)
    with assigned_next():  # every weight is the teacher's, copied below
        student = BertEncoder(**{**config.to_dict(), "num_hidden_layers": len(layers)}, dtype=teacher.dtype_policy,
                              output_hidden_states=teacher.output_hidden_states,
                              output_attentions=teacher.output_attentions)
    for layer in student.layers:
        if not layer.weights:
            continue
        name = layer.name
        if name.startswith("layer_"):
            name = config.block_name(layers[int(name.split("_")[1])])
        layer.set_weights(teacher.get_layer(name).get_weights())
    return student
