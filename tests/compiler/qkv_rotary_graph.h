// A decoder layer's q/k/v step as torch.export records a Hugging Face model at a half dtype,
// with its weights as inputs: upcast RMSNorm, the q, k and v products (three, or one product of
// a fused q/k/v weight sliced into heads), q and k rotated (rotary_embedding with cos and sin
// unsqueezed inside the layer), k and v written into the caches at the position by index_copy_,
// and attention over the caches, the graph's output (q is a temporary, as in a model).
#pragma once
#include <memory>

#include "compiler/differential.h"
#include "ir/builder.h"

namespace inplace::testing {

struct QkvShape {
  DType dtype = DType::kBFloat16;
  int64_t d = 64, q_heads = 16, kv_heads = 4, k = 256, s_max = 32;
  bool merged = false;  // one product of a fused q/k/v weight
};

inline std::unique_ptr<Graph> qkv_rotary_graph(const QkvShape& s) {
  GraphBuilder b("qkv_rotary");
  const DType t = s.dtype;
  auto ph = [&](const char* name, Shape shape, DType dt) {
    return b.set_meta(b.placeholder(name), std::move(shape), dt);
  };
  auto call = [&](const char* target, std::vector<Arg> args, KwArgs kw = {}) {
    return b.call_function(target, std::move(args), std::move(kw));
  };
  const int64_t nq = s.q_heads * s.d, nk = s.kv_heads * s.d;
  Node* x = ph("x", {1, 1, s.k}, t);
  Node* nw = ph("norm_weight", {s.k}, t);
  Node *wq = nullptr, *wk = nullptr, *wv = nullptr, *wqkv = nullptr;
  if (s.merged) {
    wqkv = ph("w_qkv", {nq + 2 * nk, s.k}, t);
  } else {
    wq = ph("w_q", {nq, s.k}, t);
    wk = ph("w_k", {nk, s.k}, t);
    wv = ph("w_v", {nk, s.k}, t);
  }
  Node* cos = ph("cos", {1, 1, s.d}, t);
  Node* sin = ph("sin", {1, 1, s.d}, t);
  Node* pos = ph("cache_position", {1}, DType::kInt64);
  Node* kc = ph("k_cache", {1, s.kv_heads, s.s_max, s.d}, t);
  Node* vc = ph("v_cache", {1, s.kv_heads, s.s_max, s.d}, t);
  Node* h = call("inplace.upcast_rms_norm", {x, nw, 1e-6});
  Node *q = nullptr, *k = nullptr, *v = nullptr;
  if (s.merged) {
    Node* qkv = call("aten.linear.default", {h, wqkv});
    q = call("aten.slice.Tensor", {qkv, 2, 0, nq});
    k = call("aten.slice.Tensor", {qkv, 2, nq, nq + nk});
    v = call("aten.slice.Tensor", {qkv, 2, nq + nk, nq + 2 * nk});
  } else {
    q = call("aten.linear.default", {h, wq});
    k = call("aten.linear.default", {h, wk});
    v = call("aten.linear.default", {h, wv});
  }
  auto heads = [&](Node* y, int64_t n) {
    Node* view = call("aten.view.default", {y, arg::ints({1, 1, n, s.d})});
    return call("aten.transpose.int", {view, 1, 2});
  };
  Node* c4 = call("aten.unsqueeze.default", {cos, 1});
  Node* s4 = call("aten.unsqueeze.default", {sin, 1});
  Node* qr = call("inplace.rotary_embedding", {heads(q, s.q_heads), c4, s4});
  Node* kr = call("inplace.rotary_embedding", {heads(k, s.kv_heads), c4, s4});
  Node* kw = call("aten.index_copy_.default", {kc, 2, pos, kr});
  Node* vw = call("aten.index_copy_.default", {vc, 2, pos, heads(v, s.kv_heads)});
  Node* o = call("aten.scaled_dot_product_attention.default", {qr, kw, vw},
                 {{"scale", 0.125}, {"enable_gqa", true}});
  b.output(arg::tuple({o}));
  return b.build();
}

// One draw for a graph's placeholders: floats in [-1, 1] at each placeholder's dtype (weights,
// tables, cache contents), token ids below 128, `cache_position` at pos, other integers 0.
inline std::vector<Tensor> rotary_draw(const Graph& g, uint32_t seed, int64_t pos) {
  std::vector<Tensor> inputs;
  for (Node* p : g.placeholders()) {
    const Shape& shape = *p->meta.shape;
    const DType dt = *p->meta.dtype;
    if (dt != DType::kInt64) {
      inputs.push_back(
          seeded_uniform(shape, seed * 131 + static_cast<uint32_t>(inputs.size())).to(dt));
      continue;
    }
    Tensor t = Tensor::zeros(shape, DType::kInt64);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int64_t>()[i] = p->name == "input_ids"        ? (seed * 37 + i * 11) % 128
                             : p->name == "cache_position" ? pos
                                                           : 0;
    inputs.push_back(t);
  }
  return inputs;
}

// Draws at positions 0, 5, 10, .. and at the cache's last slot.
inline std::vector<std::vector<Tensor>> rotary_draws_across(const Graph& g, int64_t s_max) {
  std::vector<std::vector<Tensor>> out;
  for (int64_t pos = 0; pos < s_max; pos += 5)
    out.push_back(rotary_draw(g, static_cast<uint32_t>(pos + 1), pos));
  out.push_back(rotary_draw(g, 977, s_max - 1));
  return out;
}

}  // namespace inplace::testing
