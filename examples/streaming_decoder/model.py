"""TinyDecoder: a GPT-style decoder-only transformer that decodes one token per call.

The key/value caches belong to the caller and are updated in place with
``cache.index_copy_(2, pos, k)``, the KV-cache write inplace's compiler matches (it becomes a
``kv_cache_update`` step writing straight into the caller's cache). Every shape is static:
attention runs over the whole cache of ``s_max`` slots, and the slots after ``pos`` are masked.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 128
D_MODEL = 64
N_HEADS = 4
HEAD_DIM = 16
N_LAYERS = 2
D_MLP = 256


class Block(nn.Module):
    """Pre-norm block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model, n_heads, head_dim, d_mlp):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = head_dim
        self.ln1 = nn.LayerNorm(d_model)
        self.q_proj = nn.Linear(d_model, n_heads * head_dim)
        self.k_proj = nn.Linear(d_model, n_heads * head_dim)
        self.v_proj = nn.Linear(d_model, n_heads * head_dim)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_mlp)
        self.fc2 = nn.Linear(d_mlp, d_model)

    def heads(self, t):
        # [1, 1, H*D] -> [1, H, 1, D]
        return t.view(1, 1, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, pos, mask, k_cache, v_cache):
        h = self.ln1(x)
        q = self.heads(self.q_proj(h))
        k = self.heads(self.k_proj(h))
        v = self.heads(self.v_proj(h))
        # The state update: write this step's key and value into slot `pos` of the caches.
        k_cache.index_copy_(2, pos, k)
        v_cache.index_copy_(2, pos, v)
        scores = torch.matmul(q, k_cache.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.masked_fill(mask, float("-inf"))  # [1, H, 1, s_max]
        probs = F.softmax(scores, dim=-1)
        attn = torch.matmul(probs, v_cache)  # [1, H, 1, D]
        attn = attn.transpose(1, 2).reshape(1, 1, self.n_heads * self.head_dim)
        x = x + self.o_proj(attn)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x


class TinyDecoder(nn.Module):
    """forward(token [1,1] int64, pos [1] int64, k0, v0, k1, v1 [1,4,s_max,16] float32)
    -> (logits [1, vocab] float32, next_token [1, 1] int64); the caches are written in place."""

    def __init__(self, s_max=1024, vocab=VOCAB, d_model=D_MODEL, n_heads=N_HEADS,
                 head_dim=HEAD_DIM, n_layers=N_LAYERS, d_mlp=D_MLP, tied_head=False):
        super().__init__()
        assert n_layers == 2, "forward takes exactly the caches of two layers"
        assert d_model % 2 == 0
        self.s_max = s_max
        self.vocab = vocab
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = head_dim
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(
            [Block(d_model, n_heads, head_dim, d_mlp) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.tied_head = tied_head
        if not tied_head:
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
        # Sinusoidal positions computed from `pos` (no [s_max, d] table to ship), and the
        # slot numbers the causal mask compares against `pos`.
        half = d_model // 2
        inv_freq = torch.exp(torch.arange(half, dtype=torch.float32) * (-math.log(10000.0) / half))
        self.register_buffer("inv_freq", inv_freq)
        self.register_buffer("slots", torch.arange(s_max, dtype=torch.int64))

    def cache_shape(self):
        return (1, self.n_heads, self.s_max, self.head_dim)

    def new_caches(self):
        return tuple(torch.zeros(self.cache_shape()) for _ in range(4))

    def forward(self, token, pos, k0, v0, k1, v1):
        x = self.tok_emb(token)  # [1, 1, d]
        # int64 [1, 1] * float32 [d/2] promotes to float32 (no separate cast step).
        angle = pos.view(1, 1) * self.inv_freq  # [1, d/2]
        pe = torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # [1, d]
        x = x + pe.view(1, 1, self.d_model)
        mask = self.slots > pos  # [s_max] bool: the slots not written yet
        x = self.layers[0](x, pos, mask, k0, v0)
        x = self.layers[1](x, pos, mask, k1, v1)
        x = self.ln_f(x)
        if self.tied_head:
            logits = F.linear(x, self.tok_emb.weight)
        else:
            logits = self.lm_head(x)
        logits = logits.view(1, self.vocab)
        next_token = torch.argmax(logits, dim=-1, keepdim=True)  # [1, 1] int64
        return logits, next_token


def block_rows(block, x, positions, mask, k_cache, v_cache):
    """Block.forward for T rows at once (a prompt): x [1, T, d], positions [T], mask [T, s_max]."""
    t = x.size(1)
    h = block.ln1(x)
    q = block.q_proj(h).view(1, t, block.n_heads, block.head_dim).transpose(1, 2)
    k = block.k_proj(h).view(1, t, block.n_heads, block.head_dim).transpose(1, 2)
    v = block.v_proj(h).view(1, t, block.n_heads, block.head_dim).transpose(1, 2)
    k_cache.index_copy_(2, positions, k)
    v_cache.index_copy_(2, positions, v)
    scores = torch.matmul(q, k_cache.transpose(-1, -2)) * (1.0 / math.sqrt(block.head_dim))
    scores = scores.masked_fill(mask, float("-inf"))  # [1, H, T, s_max]
    attn = torch.matmul(F.softmax(scores, dim=-1), v_cache)  # [1, H, T, D]
    attn = attn.transpose(1, 2).reshape(1, t, block.n_heads * block.head_dim)
    x = x + block.o_proj(attn)
    return x + block.fc2(F.gelu(block.fc1(block.ln2(x))))


class TinyDecoderPrefill(TinyDecoder):
    """The prefill method of the same model: forward(tokens [1, T], positions [T], k0, v0, k1, v1)
    writes the prompt's keys and values at `positions` of the caches and returns the last row's
    (logits [1, vocab], next_token [1, 1]) — what decode returns after the prompt's last token.
    Same parameters and buffers (same names) as TinyDecoder."""

    def forward(self, tokens, positions, k0, v0, k1, v1):
        t = tokens.size(1)
        x = self.tok_emb(tokens)  # [1, T, d]
        angle = positions.view(t, 1) * self.inv_freq  # [T, d/2]
        pe = torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # [T, d]
        x = x + pe.view(1, t, self.d_model)
        mask = self.slots.view(1, self.s_max) > positions.view(t, 1)  # [T, s_max]
        x = block_rows(self.layers[0], x, positions, mask, k0, v0)
        x = block_rows(self.layers[1], x, positions, mask, k1, v1)
        x = self.ln_f(x[:, -1])  # [1, d]: only the last row's logits are needed
        logits = F.linear(x, self.tok_emb.weight) if self.tied_head else self.lm_head(x)
        next_token = torch.argmax(logits, dim=-1, keepdim=True)  # [1, 1] int64
        return logits, next_token
