// The module of issue #30's failing `inplace exec`, as the Python package compiles it in
// process (the torch.export form): a buffer `cache` [4, 3] and a Linear(3, 3) as placeholders
// of the signature; forward(x, p): cache.index_copy_(0, p, l(x)); return cache.sum(0).
#pragma once
#include <memory>

#include "compiler/differential.h"
#include "compiler/exported_program.h"
#include "ir/builder.h"

namespace inplace::testing {

inline std::unique_ptr<Graph> exported_cache_module() {
  GraphBuilder b("cache_module");
  Node* w = b.placeholder("p_l_weight");
  Node* bias = b.placeholder("p_l_bias");
  Node* cache = b.placeholder("b_cache");
  Node* x = b.placeholder("x");
  Node* p = b.placeholder("p");
  Node* y = b.call_function("aten.linear.default", {x, w, bias});
  Node* next = b.call_function("aten.index_copy.default", {cache, 0, p, y});
  Node* sum = b.call_function("aten.sum.dim_IntList", {next, arg::list({0})});
  b.output(arg::tuple({next, sum}));
  std::unique_ptr<Graph> g = b.build();
  g->signature.inputs = {{"parameter", "p_l_weight", "l.weight"},
                         {"parameter", "p_l_bias", "l.bias"},
                         {"buffer", "b_cache", "cache"},
                         {"user_input", "x", ""},
                         {"user_input", "p", ""}};
  g->signature.outputs = {{"buffer_mutation", "cache"}, {"user_output", ""}};
  return g;
}

// The module's state at save time: the weights, and a cache that is not all zeros.
inline State cache_module_state() {
  return {{"l.weight", seeded_uniform({3, 3}, 11)},
          {"l.bias", seeded_uniform({3}, 12)},
          {"cache", seeded_uniform({4, 3}, 13)}};
}

inline Tensor cache_module_x(uint32_t seed) {
  return seeded_uniform({1, 3}, seed);
}
inline Tensor cache_module_p(int64_t row) {
  return Tensor::from_vector<int64_t>({row}, {1});
}

}  // namespace inplace::testing
