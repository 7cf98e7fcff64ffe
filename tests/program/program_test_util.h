// Programs for the program tests: a one-layer "decoder" whose method graphs share weights and
// a key cache. prefill and decode are the same graph at different prompt lengths (prefill's
// is dynamic up to the cache length); peek only reads the cache. The cache is a module buffer
// (`layers.0.k_cache`, runtime-owned by default) or, with `cache_input`, the caller's input
// `k_cache`; `layers.0.count` counts the calls.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/differential.h"
#include "inplace/program.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"

namespace inplace::testing {

inline constexpr int64_t kDim = 4, kSlots = 8;

inline Tensor proj_weight() {
  return seeded_uniform({kDim, kDim}, 7);
}
inline Tensor position(int64_t p) {
  return Tensor::scalar(p, DType::kInt64);
}

// k = x @ W; cache[:, :, start:start+T] = k; count += 1;
// return (k @ cache^T).sum(-1), count * 1
inline std::unique_ptr<Graph> decoder_method(const std::string& name, bool cache_input) {
  GraphBuilder b(name);
  Node* x = b.placeholder("x");
  Node* start = b.placeholder("start");
  Node* cache = cache_input ? b.placeholder("k_cache")
                            : b.get_attr("layers.0.k_cache",
                                         Tensor::zeros({1, 1, kSlots, kDim}, DType::kFloat32));
  Node* count = b.get_attr("layers.0.count", Tensor::zeros({1}, DType::kInt64));
  Node* w = b.get_attr("proj.weight", proj_weight());
  Node* k = b.call_function("_operator.matmul", {x, w});
  Node* len = b.call_method("size", {x, 2});
  Node* end = b.call_function("_operator.add", {start, len});
  b.call_function("_operator.setitem",
                  {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(start, end)}), k});
  b.call_method("add_", {count, 1});
  Node* scores =
      b.call_function("_operator.matmul", {k, b.call_method("transpose", {cache, -1, -2})});
  b.output(arg::tuple(
      {b.call_method("sum", {scores, -1}), b.call_function("_operator.mul", {count, 1})}));
  return b.build();
}

// return (q @ cache^T, q.sum()) without writing anything
inline std::unique_ptr<Graph> peek_method(bool cache_input) {
  GraphBuilder b("peek");
  Node* q = b.placeholder("q");
  Node* cache = cache_input ? b.placeholder("k_cache")
                            : b.get_attr("layers.0.k_cache",
                                         Tensor::zeros({1, 1, kSlots, kDim}, DType::kFloat32));
  b.output(arg::tuple(
      {b.call_function("_operator.matmul", {q, b.call_method("transpose", {cache, -1, -2})})}));
  return b.build();
}

struct DecoderGraphs {
  std::unique_ptr<Graph> prefill, decode, peek;
};

inline DecoderGraphs decoder_graphs(bool cache_input) {
  return {decoder_method("prefill", cache_input), decoder_method("decode", cache_input),
          peek_method(cache_input)};
}

inline Tensor caller_cache() {
  return Tensor::zeros({1, 1, kSlots, kDim}, DType::kFloat32);
}

// prefill (x dynamic up to kSlots), decode (one row), peek.
inline std::shared_ptr<const Program> decoder_program(const DecoderGraphs& g, bool cache_input,
                                                      ProgramOptions options = {}) {
  std::vector<Tensor> cache;
  if (cache_input) cache.push_back(caller_cache());
  auto with_cache = [&](std::vector<Tensor> v) {
    v.insert(v.end(), cache.begin(), cache.end());
    return v;
  };
  MethodSource prefill{"prefill",
                       g.prefill.get(),
                       with_cache({seeded_uniform({1, 1, 5, kDim}, 1), position(0)}),
                       {}};
  prefill.options.dynamic_dims.push_back({"x", 2, kSlots});
  MethodSource decode{
      "decode", g.decode.get(), with_cache({seeded_uniform({1, 1, 1, kDim}, 2), position(5)}), {}};
  MethodSource peek{"peek", g.peek.get(), with_cache({seeded_uniform({1, 1, 1, kDim}, 3)}), {}};
  return compile_program({prefill, decode, peek}, options);
}

// One call: method name and its plain inputs by placeholder name.
struct Call {
  std::string method;
  std::map<std::string, Tensor> inputs;
};

// A conversation: prefill of `prompt` rows, then decode steps, then a peek.
inline std::vector<Call> conversation(int64_t prompt, int64_t steps, uint32_t seed) {
  std::vector<Call> calls;
  calls.push_back(
      {"prefill", {{"x", seeded_uniform({1, 1, prompt, kDim}, seed)}, {"start", position(0)}}});
  for (int64_t s = 0; s < steps; ++s)
    calls.push_back({"decode",
                     {{"x", seeded_uniform({1, 1, 1, kDim}, seed + 1 + static_cast<uint32_t>(s))},
                      {"start", position(prompt + s)}}});
  calls.push_back({"peek", {{"q", seeded_uniform({1, 1, 1, kDim}, seed + 100)}}});
  return calls;
}

// The eager interpreter on the method graphs, in order, over one state (and one caller cache
// when `cache` is defined): the reference for a session.
struct EagerConversation {
  State state;
  Tensor cache;
  std::vector<std::vector<Tensor>> outputs;
};

inline EagerConversation run_eager_conversation(const DecoderGraphs& g,
                                                const std::vector<Call>& calls, bool cache_input) {
  EagerConversation r;
  r.state = initial_state(*g.prefill);
  if (cache_input) r.cache = caller_cache();
  for (const Call& c : calls) {
    const Graph& graph = c.method == "prefill"  ? *g.prefill
                         : c.method == "decode" ? *g.decode
                                                : *g.peek;
    std::map<std::string, Value> in;
    for (const auto& [name, t] : c.inputs) in[name] = Value::from_tensor(t.clone());
    if (cache_input) in["k_cache"] = Value::from_tensor(r.cache);
    RunOutput out = run_eager(graph, in, &r.state);
    std::vector<Tensor> flat;
    for (const Value& v : out.flat) flat.push_back(v.tensor);
    r.outputs.push_back(flat);
  }
  return r;
}

// Every output of every call equal (to 1e-6), named by `what`, the call and the output.
inline void expect_outputs_equal(const std::vector<std::vector<Tensor>>& got,
                                 const std::vector<std::vector<Tensor>>& want,
                                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t c = 0; c < got.size(); ++c) {
    ASSERT_EQ(got[c].size(), want[c].size()) << what << " call " << c;
    for (size_t j = 0; j < got[c].size(); ++j)
      EXPECT_TRUE(tensor_equal(got[c][j], want[c][j], 1e-6))
          << what << " call " << c << " output " << j;
  }
}

}  // namespace inplace::testing
