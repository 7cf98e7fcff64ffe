// GraphBuilder: writes FX-style graphs by hand in C++ (tests, examples, the C++ frontend).
//
//   GraphBuilder b("kv_update");
//   Node* cache = b.get_attr("cache", Tensor::zeros({1, 4, 16, 8}, DType::kFloat32));
//   Node* k = b.placeholder("k");
//   Node* pos = b.placeholder("pos");
//   b.call_function("_operator.setitem",
//                   {cache, arg::tuple({arg::slice(), arg::slice(), pos}), k});
//   b.output(arg::tuple({cache}));
//   std::unique_ptr<Graph> g = b.build();
#pragma once
#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace inplace {

// Anything that can be a node argument: a node, a number, a string, a dtype, None (nullptr)
// or a Value built with the arg:: helpers below. Lets calls read like Python: {x, 1, "mean"}.
struct Arg {
  Value value;
  Arg(Value v) : value(std::move(v)) {}        // NOLINT: implicit by design
  Arg(Node* n) : value(Value::node_ref(n)) {}  // NOLINT
  Arg(std::nullptr_t) {}                       // NOLINT: None
  Arg(bool v) : value(Value::boolean(v)) {}    // NOLINT
  template <std::integral T>
  requires(!std::same_as<T, bool>) Arg(T v)
      : value(Value::integer(static_cast<int64_t>(v))) {}  // NOLINT
  template <std::floating_point T>
  Arg(T v) : value(Value::floating(static_cast<double>(v))) {}  // NOLINT
  Arg(const char* s) : value(Value::string(s)) {}               // NOLINT
  Arg(std::string s) : value(Value::string(std::move(s))) {}    // NOLINT
  Arg(DType t) : value(Value::dtype_value(t)) {}                // NOLINT
  Arg(Tensor t) : value(Value::from_tensor(std::move(t))) {}    // NOLINT
};

using KwArgs = std::vector<std::pair<std::string, Arg>>;

// Python-shaped argument values.
namespace arg {
Value none();
Value list(std::vector<Arg> items);
Value tuple(std::vector<Arg> items);
Value ints(const std::vector<int64_t>& values);  // a list of ints: [2, 3]
Value dict(KwArgs items);
// slice(start, stop, step); nullptr for an absent bound: arg::slice() is `:`.
Value slice(Arg start = nullptr, Arg stop = nullptr, Arg step = nullptr);
Value ellipsis();
Value device(std::string name);
}  // namespace arg

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");

  // A graph input; `name` is kept exactly (inputs are bound by it), so it must be new.
  // `default_value` becomes args[0], as FX stores a Python default.
  Node* placeholder(const std::string& name, std::optional<Arg> default_value = std::nullopt);
  // Reads constant/buffer `target`, registering `value` as its initial contents.
  Node* get_attr(const std::string& target, Tensor value);
  // Reads a constant already registered (a second get_attr of the same buffer).
  Node* get_attr(const std::string& target);
  Node* call_function(const std::string& target, std::vector<Arg> args, KwArgs kwargs = {},
                      const std::string& name_hint = "");
  Node* call_method(const std::string& method, std::vector<Arg> args, KwArgs kwargs = {},
                    const std::string& name_hint = "");
  // `return value`; return several values with arg::tuple({...}) or outputs().
  Node* output(Arg value);
  Node* outputs(std::vector<Arg> values);  // `return (a, b, ...)`

  // Records the shape/dtype a frontend would (meta), returning the node for chaining.
  Node* set_meta(Node* n, Shape shape, DType dtype);
  void set_signature(Signature signature);

  Graph& graph() { return *graph_; }
  // Verifies and hands the graph over; the builder is empty afterwards.
  std::unique_ptr<Graph> build();

 private:
  Node* add(NodeOp op, const std::string& target, std::vector<Arg> args, KwArgs kwargs,
            const std::string& name_hint);
  std::unique_ptr<Graph> graph_;
};

}  // namespace inplace
