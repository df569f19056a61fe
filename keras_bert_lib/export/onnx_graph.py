"""Exact rewrites of tf2onnx's graph of our models, so that ONNX Runtime's optimiser fuses it.

tf2onnx spells out what TensorFlow computes; ONNX Runtime's transformer optimiser recognises the
graphs PyTorch exports. These rewrites bridge the two without changing a value: weights become
initializers, Keras' LayerNorm one LayerNormalization, Keras' tensordot Dense one MatMul, and two
products by constants the divisions the optimiser looks for. Each returns how much it changed.
"""

import collections

import numpy as np
from onnx import helper, numpy_helper


def weights_to_initializers(proto, weights, inputs):
    """Turns the graph inputs named in `weights` ({name: array}) into initializers, in place.

    The export converts a function that takes the model's variables as inputs, so tf2onnx never
    holds (and deep-copies, once per optimiser pass) the weights, which would multiply the
    conversion's time and memory by the number of passes. Only the weights some node reads are
    stored (dropout seed states are not); the graph keeps `inputs` as its inputs.

    Example:
        ```python
        # weights_to_initializers(proto, {"w0": kernel, ...}, ("token_ids", "padding_mask"))
        ```
    """
    graph = proto.graph
    read = {name for node in graph.node for name in node.input}
    keep = [value for value in graph.input if value.name in inputs]
    graph.initializer.extend(numpy_helper.from_array(np.asarray(array), name)
                             for name, array in weights.items() if name in read)
    del graph.input[:]
    graph.input.extend(keep)


def fold_layer_norms(proto):
    """Replaces each Keras LayerNormalization subgraph with one ONNX `LayerNormalization` (opset
    17), in place; returns how many. ONNX Runtime's optimiser fuses attention only around
    LayerNormalization nodes, and tf2onnx leaves Keras' form spelt out:

        mean = avg(x); var = avg((x − mean)²); s = γ / √(var + ε)
        y = x·s + (β − mean·s)          (tf2onnx: GlobalAveragePool, Reciprocal(Sqrt), Neg, …)

    Example:
        ```python
        # fold_layer_norms(proto)  # 2L + 1 for a BERT of L blocks
        ```
    """
    graph = proto.graph
    producer, consumers = _links(graph)
    constants = {t.name: t for t in graph.initializer}

    def parent(name, op):
        node = producer.get(name)
        return node if node is not None and node.op_type == op else None

    def only_child(node, op):
        children = consumers[node.output[0]]
        return children[0] if len(children) == 1 and children[0].op_type == op else None

    def other(node, name):
        return node.input[1] if node.input[0] == name else node.input[0]

    def vector(name):  # a 1-D initializer name for γ or β: the initializer itself, or under a Reshape
        reshape = parent(name, "Reshape")
        source = reshape.input[0] if reshape is not None else name
        if source not in constants:
            return None
        if constants[source].dims == [np.prod(constants[source].dims)]:
            return source
        flat = numpy_helper.from_array(numpy_helper.to_array(constants[source]).reshape(-1), source + "/flat")
        graph.initializer.append(flat)
        constants[flat.name] = flat
        return flat.name

    folded = {}  # the final Add's name → the LayerNormalization node
    matched = []
    for reciprocal in [n for n in graph.node if n.op_type == "Reciprocal"]:
        sqrt = parent(reciprocal.input[0], "Sqrt")
        add_eps = sqrt and parent(sqrt.input[0], "Add")
        if add_eps is None:
            continue
        eps_name = next((i for i in add_eps.input if i in constants), None)
        variance = parent(other(add_eps, eps_name or ""), "GlobalAveragePool")
        square = variance and parent(variance.input[0], "Mul")
        sub = square and square.input[0] == square.input[1] and parent(square.input[0], "Sub")
        mean = sub and parent(sub.input[1], "GlobalAveragePool")
        scale = only_child(reciprocal, "Mul")
        if eps_name is None or not mean or mean.input[0] != sub.input[0] or scale is None:
            continue
        x = sub.input[0]
        muls = consumers[scale.output[0]]
        x_mul = next((m for m in muls if m.op_type == "Mul" and x in m.input), None)
        neg_mul = next((m for m in muls if m.op_type == "Mul" and parent(other(m, scale.output[0]), "Neg")), None)
        beta_add = neg_mul and only_child(neg_mul, "Add")
        out = x_mul and only_child(x_mul, "Add")
        if len(muls) != 2 or not beta_add or not out or beta_add.output[0] not in out.input:
            continue
        gamma, beta = vector(other(scale, reciprocal.output[0])), vector(other(beta_add, neg_mul.output[0]))
        if gamma is None or beta is None:
            continue
        epsilon = float(numpy_helper.to_array(constants[eps_name]).reshape(-1)[0])
        folded[out.name] = helper.make_node("LayerNormalization", [x, gamma, beta], list(out.output),
                                            name=out.name + "/LayerNormalization", axis=-1, epsilon=epsilon)
        matched += [reciprocal, sqrt, add_eps, variance, square, sub, mean, scale, x_mul, neg_mul, beta_add, out,
                    producer[other(neg_mul, scale.output[0])]]
    dead = {n.name for n in matched}  # tf2onnx names every node uniquely
    nodes = [folded[n.name] if n.name in folded else n for n in graph.node if n.name in folded or n.name not in dead]
    del graph.node[:]
    graph.node.extend(nodes)
    _drop_unread(graph)
    return len(folded)


def products_as_divisions(proto):
    """Rewrites two products by constants as the divisions ONNX Runtime's optimiser looks for, in
    place; returns {"attention scale": n, "GELU": n}. TensorFlow's constant folding turns every
    division by a constant into a product by its reciprocal, and the optimiser matches:

    - attention as MatMul → Div(√d_k) → Add mask → Softmax; with a Mul it takes the mask's Mul
      for the scale's (it follows the first Mul parent of the Add only) and fuses nothing;
    - GELU as x/√2 → Erf → …, ours 0.5·x·(1 + erf(x·(1/√2))), the form TFLite's converter turns
      into its GELU operator.

    Example:
        ```python
        # products_as_divisions(proto)  # {"attention scale": L, "GELU": L} for L blocks
        ```
    """
    graph = proto.graph
    producer, _ = _links(graph)
    constants = {t.name: t for t in graph.initializer}

    def scalar(name):
        return numpy_helper.to_array(constants[name]) if name in constants and \
            int(np.prod(constants[name].dims)) == 1 else None

    def as_division(mul):
        name = mul.input[1] + "/reciprocal"
        if name not in constants:  # layers share one constant
            value = scalar(mul.input[1])
            constants[name] = numpy_helper.from_array(np.asarray(1.0 / value, value.dtype), name)
            graph.initializer.append(constants[name])
        mul.op_type, mul.input[1] = "Div", name

    def product_by_constant(name, of):
        mul = producer.get(name)
        if mul is None or mul.op_type != "Mul" or scalar(mul.input[1]) is None:
            return None
        source = producer.get(mul.input[0])
        return mul if source is not None and source.op_type == of else None

    counts = {"attention scale": 0, "GELU": 0}
    for node in list(graph.node):
        if node.op_type == "Softmax" and producer.get(node.input[0]) is not None:
            add = producer[node.input[0]]
            mul = next((m for m in map(lambda i: product_by_constant(i, "MatMul"), add.input) if m), None)
            if add.op_type == "Add" and mul is not None:
                as_division(mul)
                counts["attention scale"] += 1
        elif node.op_type == "Erf":
            mul = producer.get(node.input[0])
            if mul is not None and mul.op_type == "Mul" and scalar(mul.input[1]) is not None and \
                    abs(float(scalar(mul.input[1]).reshape(-1)[0]) - 0.5 ** 0.5) < 1e-6:
                as_division(mul)
                counts["GELU"] += 1
    _drop_unread(graph)
    return counts


def unflatten_dense_layers(proto):
    """Rewrites Keras' Dense on a (B, T, D) input as one MatMul on it, in place; returns how many.

    Keras computes it as tensordot: reshape to (B·T, D), a 2-D MatMul, reshape back to
    (B, T, K) from the input's own shape, which is what TensorFlow runs fastest (the MatMul fuses
    with its bias). ONNX's MatMul takes (B, T, D) directly, and ONNX Runtime's optimiser fuses
    attention only when the projections read the block's input with nothing in between.

    Example:
        ```python
        # unflatten_dense_layers(proto)  # 6 per block (Q, K, V, attention output, FFN in and out)
        ```
    """
    graph = proto.graph
    producer, consumers = _links(graph)
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}

    def through_casts(name):
        node = producer.get(name)
        while node is not None and node.op_type == "Cast":
            node = producer.get(node.input[0])
        return node

    def shape_of(name):  # the tensor whose Shape `name` is (through Cast, Gather, Slice), or None
        node = through_casts(name)
        while node is not None and node.op_type in ("Gather", "Slice"):
            node = through_casts(node.input[0])
        return node.input[0] if node is not None and node.op_type == "Shape" else None

    count = 0
    for matmul in [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in constants]:
        flatten, after = producer.get(matmul.input[0]), consumers[matmul.output[0]]
        if flatten is None or flatten.op_type != "Reshape" or len(after) != 1 or after[0].op_type != "Reshape":
            continue
        x, kernel, restore = flatten.input[0], constants[matmul.input[1]], after[0]
        target = through_casts(restore.input[1])
        if kernel.ndim != 2 or list(constants.get(flatten.input[1], [])) != [-1, kernel.shape[0]] or \
                target is None or target.op_type != "Concat" or shape_of(target.input[0]) != x or \
                len(target.input) != 2 or list(constants.get(target.input[1], [])) != [kernel.shape[1]]:
            continue
        matmul.input[0] = x  # (B, T, D) · (D, K) = (B, T, K): the restoring Reshape is now the identity
        for reader in consumers[restore.output[0]]:
            for i, name in enumerate(reader.input):
                if name == restore.output[0]:
                    reader.input[i] = matmul.output[0]
        count += 1
    _drop_unread(graph)
    return count


def _links(graph):
    """{tensor: the node that makes it}, {tensor: the nodes that read it}."""
    producer = {out: node for node in graph.node for out in node.output}
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    return producer, consumers


def _drop_unread(graph):
    """Removes nodes whose outputs nothing reads (the Reshapes that fed γ and β), and initializers
    no node reads."""
    outputs = {o.name for o in graph.output}
    while True:
        read = {name for node in graph.node for name in node.input} | outputs
        keep = [n for n in graph.node if any(o in read for o in n.output)]
        if len(keep) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(keep)
    read = {name for node in graph.node for name in node.input}
    used = [t for t in graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(used)
