"""MACs formulas of the ops whose work is not ``output elements x one reduction``: recurrent
layers (LSTM, GRU, RNN and ONNX Runtime's DynamicQuantizeLSTM), attention (ONNX Attention,
com.microsoft Attention / QAttention / MultiHeadAttention) and Einsum.

Each formula returns the MACs of the layer's matrix products, or None when a shape or attribute
it needs is unknown (the caller then leaves the node out, never guesses). Gate non-linearities,
the softmax and biases are not multiply-accumulates and are left out, as Conv's bias is.
"""

from __future__ import annotations

from studio.tools.graph.model import Graph, Node

# gate blocks per recurrent op: the input and the recurrence matrices have gates x hidden rows
GATES = {"LSTM": 4, "DynamicQuantizeLSTM": 4, "GRU": 3, "RNN": 1}
ATTENTION = {"Attention", "QAttention", "MultiHeadAttention"}


def known(shape) -> bool:
    """True when every dim of ``shape`` is a concrete size."""
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def prod(shape) -> int:
    """The number of elements of ``shape`` (1 for a scalar)."""
    out = 1
    for d in shape:
        out *= d
    return out


def _shape(graph: Graph, node: Node, slot: int):
    """The known shape of input ``slot`` of ``node`` (weights first), else None."""
    if slot >= len(node.inputs) or not node.inputs[slot]:
        return None
    name = node.inputs[slot]
    weight = graph.weight(name)
    shape = weight.shape if weight is not None else graph.value(name).shape
    return tuple(shape) if known(shape) else None


def recurrent_macs(graph: Graph, node: Node) -> int | None:
    """``steps x batch x directions x gates x hidden x (input + hidden)``.

    Each step multiplies the input ``[batch, input]`` by ``W`` (``gates*hidden x input``) and the
    previous hidden state by ``R`` (``gates*hidden x hidden``), per direction. ``X`` is
    ``[seq, batch, input]`` (``layout=1``: ``[batch, seq, input]``; either way the first two dims
    multiply to steps x batch). The hidden size is the ``hidden_size`` attribute, else ``R``'s last dim
    (ONNX lays ``R`` out ``[dirs, gates*hidden, hidden]``).
    """
    x = _shape(graph, node, 0)
    if x is None or len(x) != 3:
        return None
    hidden = node.attributes.get("hidden_size")
    if not isinstance(hidden, int) or hidden <= 0:
        r = _shape(graph, node, 2)
        if r is None or node.type not in ("LSTM", "GRU", "RNN"):
            return None
        hidden = r[-1]
    directions = 2 if str(node.attributes.get("direction", "forward")) == "bidirectional" else 1
    return x[0] * x[1] * directions * GATES[node.type] * hidden * (x[2] + hidden)


def _com_microsoft_attention(graph: Graph, node: Node) -> int | None:
    """Attention / QAttention: the Q, K, V projections, ``Q K^T`` and ``softmax x V``.

    ``input`` is ``[batch, seq, in]`` and ``weights`` ``[in, q + k + v]`` (``qkv_hidden_sizes``
    when they differ); a ``past`` state ``[2, batch, heads, past, head]`` lengthens the keys.
    """
    x, w = _shape(graph, node, 0), _shape(graph, node, 1)
    if x is None or w is None or len(x) != 3 or len(w) != 2:
        return None
    batch, seq, width = x
    sizes = node.attributes.get("qkv_hidden_sizes")
    q, _k, v = (list(sizes) if sizes and len(sizes) == 3 else [w[1] // 3] * 3)
    past_slot = 4 if node.type == "Attention" else 8
    past = _shape(graph, node, past_slot)
    keys = seq + (past[3] if past is not None and len(past) == 5 else 0)
    return batch * seq * width * w[1] + batch * seq * keys * (q + v)


def _multi_head_attention(graph: Graph, node: Node) -> int | None:
    """MultiHeadAttention (no projections inside): ``Q K^T`` and ``softmax x V``.

    ``query`` ``[batch, seq, hidden]`` with ``key`` / ``value`` ``[batch, keys, hidden]`` or
    ``[batch, heads, keys, head]``; or packed QKV in ``query`` ``[batch, seq, heads, 3, head]``.
    """
    q = _shape(graph, node, 0)
    if q is None:
        return None
    if len(q) == 5:  # packed QKV: keys are the queries' own sequence
        hidden = q[2] * q[4]
        return q[0] * q[1] * q[1] * 2 * hidden
    k, v = _shape(graph, node, 1), _shape(graph, node, 2)
    if len(q) != 3 or k is None or v is None:
        return None
    if len(k) == 3 and len(v) == 3:
        keys, v_hidden = k[1], v[2]
    elif len(k) == 4 and len(v) == 4:
        keys, v_hidden = k[2], v[1] * v[3]
    else:
        return None
    return q[0] * q[1] * keys * (q[2] + v_hidden)


def _onnx_attention(graph: Graph, node: Node) -> int | None:
    """ONNX Attention (opset 23): ``Q K^T`` and ``softmax x V`` per query head.

    4-D inputs are ``[batch, heads, seq, head]``; 3-D ones ``[batch, seq, heads x head]`` with the
    head counts in ``q_num_heads`` / ``kv_num_heads``.
    """
    q, k, v = (_shape(graph, node, i) for i in range(3))
    if q is None or k is None or v is None or len(q) != len(k) or len(q) not in (3, 4):
        return None
    if len(q) == 4:
        batch, heads, seq, head = q
        return batch * heads * seq * k[2] * (head + v[3])
    q_heads, kv_heads = node.attributes.get("q_num_heads"), node.attributes.get("kv_num_heads")
    if not isinstance(q_heads, int) or not isinstance(kv_heads, int) or q_heads <= 0 or kv_heads <= 0:
        return None
    batch, seq, q_hidden = q
    return batch * seq * k[1] * (q_hidden + q_heads * (v[2] // kv_heads))


def attention_macs(graph: Graph, node: Node) -> int | None:
    """MACs of an attention op (see the three layouts above); None when a shape is unknown."""
    if node.type == "MultiHeadAttention":
        return _multi_head_attention(graph, node)
    if node.type == "Attention" and node.domain in ("", "ai.onnx"):
        return _onnx_attention(graph, node)
    return _com_microsoft_attention(graph, node)


def einsum_macs(graph: Graph, node: Node, out_elements: int) -> int | None:
    """``output elements x product of the summed-over letters``: the loop count of the
    equation as written (a contraction order chosen at run time may do less)."""
    equation = str(node.attributes.get("equation", "")).replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if not arrow or len(terms) != len(node.inputs):
        return None  # the implicit form (no "->") sums no letter we could name without its rules
    sizes: dict[str, int] = {}
    for slot, term in enumerate(terms):
        shape = _shape(graph, node, slot)
        if shape is None:
            return None
        letters = term.replace("...", "")
        offset = len(shape) - len(letters) if "..." in term else 0
        if offset < 0 or (not offset and len(letters) != len(shape) and "..." not in term):
            return None
        start = term.index("...") if "..." in term else len(letters)
        for i, letter in enumerate(letters):
            sizes[letter] = max(sizes.get(letter, 1), shape[i if i < start else i + offset])
    summed = set(sizes) - set(rhs.replace("...", ""))
    return out_elements * prod(sizes[s] for s in summed)
