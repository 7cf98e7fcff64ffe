// Passes that follow functionalization when a program is compiled into an engine; the pipeline
// lists them in engine_passes() (pipeline.h) and compile() runs them with the others.
#pragma once
#include <cstdint>
#include <memory>

#include "passes/pass.h"

namespace inplace {

// drop_eval_dropout: dropout with train=False (or p == 0) is the identity: its readers read its
// input and the node goes (no copy, no kernel on any device). A returned dropout stays.
std::unique_ptr<Pass> make_drop_eval_dropout_pass();

// lift_mutated_buffers: each mutated buffer (input index >= num_placeholders) becomes a
// placeholder after the existing ones, so input index i is the i-th placeholder (and the
// engine's i-th input binding). Its shape and dtype are the buffer constant's.
std::unique_ptr<Pass> make_lift_mutated_buffers_pass();

// kv_cache_update: rewrites the write that produces a mutated 4-D input's new value —
// slice_scatter (step 1) / index_copy / index_put along dim 2 — into kv_cache_update and
// marks that mutation kKvCacheUpdate. Shapes come from metadata (placeholder meta,
// options.input_metas); an input whose shape is unknown is left alone.
std::unique_ptr<Pass> make_kv_cache_update_pass();

// drop_identity_casts: x.to(dtype) / _to_copy(x, dtype) with x already of that dtype (and
// nothing else asked) is x, when only calls read it.
std::unique_ptr<Pass> make_drop_identity_casts_pass();

// recognize_attention: softmax((q @ k^T) * c masked_fill(~mask, -inf)) @ v over 4-D float32
// operands (make_fx's bmm decomposition) becomes scaled_dot_product_attention(q, k, v, mask,
// scale=c).
std::unique_ptr<Pass> make_recognize_attention_pass();

// canonicalize_repeat_kv: scaled_dot_product_attention over repeat_kv(k) and repeat_kv(v)
// (unsqueeze, expand, reshape) becomes attention over k and v with enable_gqa=True.
std::unique_ptr<Pass> make_canonicalize_repeat_kv_pass();

// attend_filled_prefix: attention over a whole cache written at position p under the mask
// `arange(s_max) + c <= p + b` becomes attention over cache[:, :, :p + b - c + 1] without the
// mask, when the mask provably keeps exactly that prefix (the pass's file says when).
std::unique_ptr<Pass> make_attend_filled_prefix_pass();

// fold_position_arithmetic: a one-element int64 value proved equal to an input's element (the
// `arange(1) + cache_position` chains torch.export records) is a view of that element; `x + 0` of
// an integer tensor is x.
std::unique_ptr<Pass> make_fold_position_arithmetic_pass();

// outer_product_matmul: a matmul a [.., M, 1] @ b [.., 1, N] (inner dim 1, the rotary's
// `inv_freq @ position_ids`) is a * b (+ 0 at float dtypes, as the matmul's sum from zero).
std::unique_ptr<Pass> make_outer_product_matmul_pass();

// prepare_in_out_weights (with options.prepare_weights): at decode size, addmm(b, x, W) and
// mm(x, W) over a read-only weight stored [in, out] become linear(x, clone(t(W)), b): a constant W
// is transposed at compile time; a bound one is a prepared input, copied when it is bound.
std::unique_ptr<Pass> make_prepare_in_out_weights_pass();

// fuse_weight_casts: linear(x, w.to(float32)) with w a bfloat16 constant becomes
// inplace.fused_linear(x, w), which reads the bf16 weight directly (float32 compute); likewise
// F.embedding(ids, w).to(float32) becomes inplace.fused_embedding(ids, w).
std::unique_ptr<Pass> make_fuse_weight_casts_pass();

// fuse_rms_norm: w * (x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)) becomes
// rms_norm(x, [d], w, eps) when nothing else reads the intermediates.
std::unique_ptr<Pass> make_fuse_rms_norm_pass();

// fuse_rotary: x * cos + cat(-x[..., d/2:], x[..., :d/2], -1) * sin becomes
// rotary_embedding(x, cos, sin) when nothing else reads the intermediates.
std::unique_ptr<Pass> make_fuse_rotary_pass();
std::unique_ptr<Pass> make_fuse_rotary_table_pass();
// fuse_head_norm_rotary: rotary_embedding(transposes(upcast_rms_norm(x, w, eps)), cos, sin), a
// per-head norm before the rotary (Qwen3, Gemma 3), becomes rms_norm_rotary(transposes(x), w,
// eps, weight_in_float, cos, sin) when nothing else reads the norm.
std::unique_ptr<Pass> make_fuse_head_norm_rotary_pass();
// fuse_norm_weight_offsets: upcast_rms_norm / rms_norm_rotary of a float32 weight
// add(to(w, float32), 1.0) (Gemma's 1 + w) read by it alone read w with weight_offset=1.0.
std::unique_ptr<Pass> make_fuse_norm_weight_offsets_pass();
// fuse_norm_residuals: add(r, upcast_rms_norm(x, ..)), the norm read by the add alone, becomes
// upcast_rms_norm(x, .., residual=r).
std::unique_ptr<Pass> make_fuse_norm_residuals_pass();

// fuse_linear_epilogues: at decode size (PassOptions::decode_max_rows), add(r, fused_linear(x, w,
// b)) becomes fused_linear(x, w, b, residual=r) and mul(silu(fused_linear(x, wg)),
// fused_linear(x, wu)) becomes gated_mlp(x, wg, wu, "silu").
std::unique_ptr<Pass> make_fuse_linear_epilogues_pass();

// fuse_addmm: at decode size, addmm(b, x.view(-1, k), W) over a weight stored [in, out] (viewed
// back to x's leading dims), the residual add after it and (with fuse_norm_prologues) the
// layer_norm before it become one fused_addmm(x, W, b, residual, eps, norm_weight, norm_bias).
std::unique_ptr<Pass> make_fuse_addmm_pass();

// fuse_product_epilogues (after fuse_pointwise): a fused_pointwise step over one fused_addmm,
// fused_linear or rms_norm_linear product that nothing else reads becomes the product's
// epilogue program (GPT-2's GELU-tanh).
std::unique_ptr<Pass> make_fuse_product_epilogues_pass();

// merge_sibling_linears (PassOptions::merge_sibling_linears; on where the backend prefers it):
// bias-free fused_linear products of one decode-size input become one product over the stacked
// weights, each former result a slice of it.
std::unique_ptr<Pass> make_merge_sibling_linears_pass();

// fuse_norm_prologues (PassOptions::fuse_norm_prologues; on where the backend prefers it): at
// decode size, fused_linear(rms_norm(x, [k], w, eps), W, b) becomes rms_norm_linear(x, w, eps,
// W, b) and gated_mlp(rms_norm(...), Wg, Wu, act) becomes rms_norm_gated_mlp(x, w, eps, Wg, Wu,
// act), when the product is the norm's only reader; a layer_norm(x, [k], w, b, eps) before a
// fused_linear becomes rms_norm_linear(x, w, eps, W, bias, norm="layer", norm_bias=b).
std::unique_ptr<Pass> make_fuse_norm_prologues_pass();

// fuse_rotary_epilogues: rotary_embedding of head-aligned column ranges (q and k) of one
// rms_norm_linear product becomes that product's epilogue (its cos, sin and
// rotary_cols arguments); the ranges must tile a prefix of the columns that nothing else reads.
std::unique_ptr<Pass> make_fuse_rotary_epilogues_pass();

// fuse_pointwise (after the named fusions): chains of elementwise ops whose intermediates nothing
// else reads become one fused_pointwise step each, bitwise the unfused chain on the cpu.
std::unique_ptr<Pass> make_fuse_pointwise_pass();

}  // namespace inplace
