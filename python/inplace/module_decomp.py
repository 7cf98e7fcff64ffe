"""Modules whose forward torch.fx cannot trace through, written in the ops it can.

``nn.GRUCell`` and ``nn.MultiheadAttention`` branch on their inputs' rank (``input.dim() in
(1, 2)``), which a Proxy cannot answer, and end in fused calls (``_VF.gru_cell``,
``F.multi_head_attention_forward`` and, in eval, ``torch._native_multi_head_attention``) that
have no inplace op. The FullTracer calls these functions instead of the module's forward: the
same math as PyTorch's reference implementations, in linear / chunk / sigmoid / bmm / softmax.
The rank is known from the example inputs (``ShapeTracer`` records it); everything else stays
in the graph.
"""
import math

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["DECOMPOSITIONS"]


def _rank(x):
    if not isinstance(x, torch.fx.Proxy):
        return x.dim()
    rank = x.node.meta.get("example_rank")
    if rank is None:
        raise TypeError("inplace: the rank of '%s' is unknown while tracing; pass example "
                        "inputs to inplace.compile" % x.node.name)
    return rank


def _dtype(x):
    if not isinstance(x, torch.fx.Proxy):
        return x.dtype
    dtype = x.node.meta.get("example_dtype")
    if dtype is None:
        raise TypeError("inplace: the dtype of '%s' is unknown while tracing" % x.node.name)
    return dtype


def gru_cell(m, input, hx=None):
    """nn.GRUCell.forward: r, z, n gates as in torch.nn._VF.gru_cell."""
    batched = _rank(input) == 2
    if not batched:
        input = input.unsqueeze(0)
    if hx is None:
        hx = torch.zeros(input.size(0), m.hidden_size, dtype=input.dtype)
    elif not batched:
        hx = hx.unsqueeze(0)
    gi = F.linear(input, m.weight_ih, m.bias_ih)
    gh = F.linear(hx, m.weight_hh, m.bias_hh)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    reset = torch.sigmoid(i_r + h_r)
    update = torch.sigmoid(i_z + h_z)
    new = torch.tanh(i_n + reset * h_n)
    hy = new + update * (hx - new)
    return hy if batched else hy.squeeze(0)


def multihead_attention(m, query, key, value, key_padding_mask=None, need_weights=True,
                        attn_mask=None, average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention.forward (both its eval fast path and the general path compute
    this): packed or separate q/k/v projections, scaled dot product with bool or float masks,
    out projection, optional averaged weights."""
    if m.bias_k is not None or m.add_zero_attn:
        raise NotImplementedError("inplace: MultiheadAttention with add_bias_kv or add_zero_attn")
    if m.training and m.dropout > 0.0:
        raise NotImplementedError("inplace: MultiheadAttention dropout in training mode")
    batched = _rank(query) == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif m.batch_first:
        query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    tgt_len, bsz = query.size(0), query.size(1)
    src_len = key.size(0)
    if m._qkv_same_embed_dim:
        w_q, w_k, w_v = m.in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    b_q = b_k = b_v = None
    if m.in_proj_bias is not None:
        b_q, b_k, b_v = m.in_proj_bias.chunk(3)
    q = F.linear(query, w_q, b_q)
    k = F.linear(key, w_k, b_k)
    v = F.linear(value, w_v, b_v)
    # -1, not bsz * H: sizes stay shape queries, never arithmetic on them
    q = q.reshape(tgt_len, -1, hd).transpose(0, 1)
    k = k.reshape(src_len, -1, hd).transpose(0, 1)
    v = v.reshape(src_len, -1, hd).transpose(0, 1)
    mask = None
    if attn_mask is not None:
        if _dtype(attn_mask) == torch.bool:
            mask = torch.zeros_like(attn_mask, dtype=_dtype(query)).masked_fill(attn_mask, float("-inf"))
        else:
            mask = attn_mask
        if _rank(attn_mask) == 2:
            mask = mask.unsqueeze(0)
    if key_padding_mask is not None:
        kpm = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, H, -1, -1).reshape(
            -1, 1, src_len)
        if _dtype(key_padding_mask) == torch.bool:
            kpm = torch.zeros_like(kpm, dtype=_dtype(query)).masked_fill(kpm, float("-inf"))
        mask = kpm if mask is None else mask + kpm
    q = q / math.sqrt(hd)
    scores = torch.bmm(q, k.transpose(-2, -1))
    if mask is not None:
        scores = scores + mask
    attn = torch.softmax(scores, dim=-1)
    out = torch.bmm(attn, v)
    out = out.transpose(0, 1).reshape(-1, E)
    out = F.linear(out, m.out_proj.weight, m.out_proj.bias)
    out = out.view(tgt_len, bsz, E)
    weights = None
    if need_weights:
        weights = attn.view(bsz, H, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.sum(dim=1) / H
    if not batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    elif m.batch_first:
        out = out.transpose(1, 0)
    return out, weights


DECOMPOSITIONS = {
    nn.GRUCell: gru_cell,
    nn.MultiheadAttention: multihead_attention,
}


class _GRUCellRoot(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input, hx):
        return self.inner(input, hx)


class _MultiheadAttentionRoot(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, query, key, value):
        return self.inner(query, key, value)


# A module of these types compiled by itself is traced through a root that calls it (a root
# module's own forward is traced directly, not through call_module). Its state targets carry
# the prefix "inner.", which capture strips.
ROOTS = {nn.GRUCell: _GRUCellRoot, nn.MultiheadAttention: _MultiheadAttentionRoot}
ROOT_PREFIX = "inner."
