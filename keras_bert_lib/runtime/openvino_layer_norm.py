"""Keras' layer normalization, as OpenVINO reads it from TensorFlow, made one MVN node.

Keras computes `LayerNormalization` on TensorFlow as `tf.nn.batch_normalization` does:

    mean = mean(x);  var = mean((x - mean)²);  inv = γ · (var + ε)^-½
    y = x · inv + (β - mean · inv)

OpenVINO's own fusions look for `(x - mean) / sqrt(var + ε)` and leave this form as eleven
small nodes where three would do: a cost each call pays whatever its batch, the most for a
server's batches of a few texts. `fuse_layer_norms` rewrites each one as

    y = MVN(x; ε inside the square root) · γ + β

which is the same function (Ba et al. 2016) and what OpenVINO runs as one kernel.
"""

import numpy as np


def fuse_layer_norms(ov_model):
    """Rewrites every layer normalization of `ov_model` (Keras' form on TensorFlow, above) as
    OpenVINO's MVN times γ plus β, in place, and returns how many it rewrote. A normalization in
    another form is left as it is (it still computes the same, only slower).

    Example:
        ```python
        import numpy as np
        import openvino as ov
        import openvino.opset13 as ops
        from keras_bert_lib.runtime.openvino_layer_norm import fuse_layer_norms
        x = ops.parameter([2, 4], np.float32)
        mean = ops.reduce_mean(x, [-1], True)
        variance = ops.reduce_mean(ops.squared_difference(x, mean), [-1], True)
        inv = ops.multiply(ops.power(ops.add(variance, np.float32(1e-5)), np.float32(-0.5)),
                           np.full(4, 2.0, np.float32))  # γ = 2
        shift = ops.add(ops.multiply(ops.multiply(mean, np.float32(-1)), inv), np.full(4, 0.5, np.float32))  # β
        y = ops.add(ops.multiply(x, inv), shift)
        model = ov.Model([y], [x])
        assert fuse_layer_norms(model) == 1
        assert [op.get_type_name() for op in model.get_ordered_ops()].count("MVN") == 1
        ```
    """
    fused = 0
    for op in ov_model.get_ordered_ops():
        if op.get_type_name() == "SquaredDifference":
            fused += _fuse(op)
    if fused:
        ov_model.validate_nodes_and_infer_types()
    return fused


def _fuse(squared_difference):
    """Replaces the normalization around one `SquaredDifference` node; 1 if it did, else 0."""
    import openvino.opset13 as ops

    x, mean = (port.get_source_output() for port in squared_difference.inputs())
    if mean.get_node().get_type_name() != "ReduceMean" or mean.get_node().input_value(0) != x:
        return 0
    axes = _constant(mean.get_node().input_value(1))
    variance = _only(squared_difference, "ReduceMean")
    shifted = _only(variance, "Add")
    root = _only(shifted, "Power")
    scale = _only(root, "Multiply")
    if None in (axes, variance, shifted, root, scale) or not np.array_equal(_constant(variance.input_value(1)), axes):
        return 0
    epsilon, power, gamma = _other(shifted, variance), _other(root, shifted), _other(scale, root)
    if epsilon is None or gamma is None or power is None or not np.allclose(power, -0.5) or epsilon.size != 1:
        return 0
    users = [port.get_node() for port in scale.output(0).get_target_inputs()]
    scaled = [u for u in users if u.get_type_name() == "Multiply" and x in u.input_values()]
    shift = [u for u in users if u.get_type_name() == "Multiply" and x not in u.input_values()]
    if len(scaled) != 1 or len(shift) != 1:
        return 0
    negated = next((v.get_node() for v in shift[0].input_values() if not _same(v.get_node(), scale)), None)
    if negated is None or negated.get_type_name() != "Multiply" or mean not in negated.input_values() or not (
            np.allclose(_other(negated, mean.get_node()), -1.0)):
        return 0
    offset, out = _only(shift[0], "Add"), _only(scaled[0], "Add")
    if offset is None or out is None:
        return 0
    beta = None  # bias-free (ModernBERT's): the final Add takes the shift as it is
    if not _same(offset, out):
        beta = _other(offset, shift[0])
        if beta is None or offset.output(0) not in out.input_values():
            return 0
    dtype = x.get_element_type().to_dtype()
    normalized = ops.mvn(x, ops.constant(axes.astype(np.int64)), True, float(epsilon.ravel()[0]), "inside_sqrt")
    fused = ops.multiply(normalized, ops.constant(gamma.astype(dtype)))
    fused = ops.add(fused, ops.constant(beta.astype(dtype))) if beta is not None else fused
    fused.set_friendly_name(out.get_friendly_name())
    out.output(0).replace(fused.output(0))
    return 1


def _only(node, kind):
    """The one consumer of `node`'s output, where it is a `kind` node; else None."""
    if node is None:
        return None
    users = list(node.output(0).get_target_inputs())
    return users[0].get_node() if len(users) == 1 and users[0].get_node().get_type_name() == kind else None


def _other(node, known):
    """The value of `node`'s constant input beside `known`, or None where it is not a constant."""
    values = [v for v in node.input_values() if not _same(v.get_node(), known)]
    return _constant(values[0]) if len(values) == 1 else None


def _same(a, b):
    return a.get_name() == b.get_name()  # a node's unique name: its Python wrappers are not one object


def _constant(value):
    node = value.get_node()
    return node.get_data() if node.get_type_name() == "Constant" else None
