"""An independent NumPy BERT forward pass, written from the paper and Google's modeling.py.

It shares no code with keras_bert_lib: weights come in as a dict of arrays keyed by Google's
TF1 variable names, so the parity tests also pin the meaning of our weight names.
"""

import math

import numpy as np

erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(x, wq, bq, wk, bk, wv, bv, num_heads, padding_mask=None):
    """softmax(QKᵀ/√d_k + bias)V for each head, heads concatenated; returns (context, probs)."""
    B, T, H = x.shape
    d = H // num_heads

    def split(y):
        return y.reshape(B, T, num_heads, d).transpose(0, 2, 1, 3)  # (B, N, T, d)

    q, k, v = split(x @ wq + bq), split(x @ wk + bk), split(x @ wv + bv)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)  # (B, N, T, S)
    if padding_mask is not None:
        scores = np.where(padding_mask[:, None, None, :].astype(bool), scores, -np.inf)
    probs = softmax(scores)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
    return context, probs


def bert_forward(w, token_ids, segment_ids, padding_mask, num_layers, num_heads, eps, act):
    """Post-LN BERT: returns (sequence_output, pooled_output) in float64."""
    act = {"gelu": gelu, "gelu_tanh": gelu_tanh}[act]
    w = {k: np.asarray(v, "float64") for k, v in w.items()}
    T = token_ids.shape[1]
    e = "bert/embeddings/"
    x = (w[e + "word_embeddings"][token_ids] + w[e + "position_embeddings"][:T][None]
         + w[e + "token_type_embeddings"][segment_ids])
    x = layer_norm(x, w[e + "LayerNorm/gamma"], w[e + "LayerNorm/beta"], eps)
    for i in range(num_layers):
        p = f"bert/encoder/layer_{i}/"
        s = p + "attention/self/"
        ctx, _ = attention(x, w[s + "query/kernel"], w[s + "query/bias"], w[s + "key/kernel"],
                           w[s + "key/bias"], w[s + "value/kernel"], w[s + "value/bias"],
                           num_heads, padding_mask)
        o = p + "attention/output/"
        x = layer_norm(x + ctx @ w[o + "dense/kernel"] + w[o + "dense/bias"],
                       w[o + "LayerNorm/gamma"], w[o + "LayerNorm/beta"], eps)
        h = act(x @ w[p + "intermediate/dense/kernel"] + w[p + "intermediate/dense/bias"])
        o = p + "output/"
        x = layer_norm(x + h @ w[o + "dense/kernel"] + w[o + "dense/bias"],
                       w[o + "LayerNorm/gamma"], w[o + "LayerNorm/beta"], eps)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return x, pooled
