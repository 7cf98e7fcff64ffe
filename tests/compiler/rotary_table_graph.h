// Hugging Face's rotary embedding module written as a graph (what fuse_rotary_table rewrites),
// and draws for it: the cpu and GPU tests of rotary_table.
#pragma once
#include <cmath>
#include <memory>
#include <vector>

#include "ir/builder.h"

namespace inplace::testing {

// The module's computation written out: inv_freq [h] expanded to [B, h, 1], positions [B, S]
// (int64, int32 or float32) as [B, 1, S] float32, their product, transposed, cat with itself;
// cos and sin each * `scale` and cast to `dtype` (kFloat32: no cast). Outputs (cos, sin) and,
// with `product_out`, the product too.
inline std::unique_ptr<Graph> table_graph(int64_t B, int64_t S, int64_t h, DType positions,
                                          DType dtype, double scale = 1.0,
                                          bool product_out = false) {
  GraphBuilder b("table");
  Node* inv = b.set_meta(b.placeholder("inv_freq"), {h}, DType::kFloat32);
  Node* pos = b.set_meta(b.placeholder("positions"), {B, S}, positions);
  auto call = [&](const char* t, std::vector<Arg> a, KwArgs kw = {}) {
    return b.call_function(t, std::move(a), std::move(kw));
  };
  Node* f = call("aten.expand.default",
                 {call("aten.unsqueeze.default", {call("aten.unsqueeze.default", {inv, 0}), 2}),
                  arg::list({B, -1, 1})});
  Node* p = call("aten.unsqueeze.default", {pos, 1});
  if (positions != DType::kFloat32)
    p = call("aten._to_copy.default", {p}, {{"dtype", Arg(DType::kFloat32)}});
  Node* prod = call("aten.matmul.default", {f, p});
  Node* freqs = call("aten.transpose.int", {prod, 1, 2});
  Node* emb = call("aten.cat.default", {arg::list({freqs, freqs}), -1});
  auto table = [&](const char* fn) {
    Node* t = call("aten.mul.Tensor", {call(fn, {emb}), scale});
    return dtype == DType::kFloat32 ? t
                                    : call("aten._to_copy.default", {t}, {{"dtype", Arg(dtype)}});
  };
  std::vector<Arg> outs = {table("aten.cos.default"), table("aten.sin.default")};
  if (product_out) outs.push_back(prod);
  b.output(arg::tuple(outs));
  return b.build();
}

// inv_freq as a rotary module makes it (base 10000, both signs when `mixed`), positions spread
// over [lo, lo + span) in the placeholder's dtype.
inline std::vector<Tensor> table_draw(const Graph& g, uint32_t seed, int64_t lo, int64_t span,
                                      bool mixed) {
  std::vector<Tensor> in;
  for (Node* p : g.placeholders()) {
    const Shape& shape = *p->meta.shape;
    Tensor t = Tensor::zeros(shape, DType::kFloat64);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const uint32_t r = (seed * 2654435761u) ^ static_cast<uint32_t>(i * 40503u);
      t.data<double>()[i] =
          p->name == "inv_freq"
              ? std::pow(10000.0, -2.0 * static_cast<double>(i) / (2.0 * shape[0])) *
                    (mixed && (r & 1) ? -1.0 : 1.0)
              : static_cast<double>(lo + static_cast<int64_t>(r % static_cast<uint32_t>(span)));
    }
    in.push_back(t.to(*p->meta.dtype));
  }
  return in;
}

}  // namespace inplace::testing
