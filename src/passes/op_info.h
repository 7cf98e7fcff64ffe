// What the passes ask of the op registry about a node, and a helper to emit new nodes.
#pragma once
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ops/registry.h"

namespace inplace {

// The op a call node runs and its arguments bound to the schema (node references kept).
// Throws naming the node when the target is unknown or the arguments do not fit.
ResolvedCall resolve_node(const Node& node);

// The spelling normalize gives a target: "aten.add.Tensor", "aten.relu.default",
// "_operator.getitem" for Python's operators.
std::string canonical_target(const OpDef& op);

// The canonical op name a call node runs ("add", "fused_linear"); empty for other nodes.
std::string op_name(const Node* n);

// Whether every argument of a cast (to, _to_copy) other than its input asks for nothing but
// `dtype`: no device, layout, memory format or copy beyond the defaults.
bool cast_only_to_dtype(const ResolvedCall& rc, DType dtype);

// Positional argument i of a call node as an int: `fallback` where it is absent or None,
// INT64_MIN where it is something else (a node, a float).
int64_t int_arg(const Node* n, size_t i, int64_t fallback);

// Whether `v` is the number 1 (an int or a float): addmm's beta and alpha, add's alpha.
bool is_number_one(const Value& v);
// Whether a call node is `view(x, shape)` or `reshape(x, shape)` of a node, positional arguments
// only (the views GPT-2's Conv1D puts around its addmm).
bool is_view_or_reshape(const Node* n);

// Whether a call node is attention as the attention rewrites take it: scaled_dot_product_attention
// or rounded_attention (the same arguments, and more keywords).
bool is_attention(const Node* n);
// Every keyword-only argument of a resolved call, by name, with its value (what a rewrite passes
// on to the op it makes in the call's place).
std::vector<std::pair<std::string, Value>> keyword_args(const ResolvedCall& rc);

// Whether a getitem node's index holds only None, full slices (`:`, `0::1`) and Ellipsis: its
// result is its input with unit dims inserted, no element moved (x[:, :, None], m[None, None]).
bool getitem_inserts_unit_dims_only(const Node* n);

// Whether any overload of `name` is registered ("reshape_as").
bool has_op(const std::string& name);
// Whether the op's (first) result is a tensor.
bool returns_tensor(const OpDef& op);

// Inserts new call nodes before a fixed position and remembers what it made.
class Emitter {
 public:
  Emitter(Graph& graph, Node* before) : graph_(graph), before_(before) {}
  Node* call(const std::string& target, std::vector<Value> args,
             std::vector<std::pair<std::string, Value>> kwargs = {},
             const std::string& name_hint = "");
  Node* before() const { return before_; }
  Graph& graph() const { return graph_; }
  const std::vector<Node*>& emitted() const { return emitted_; }
  bool made(const Node* n) const;

 private:
  Graph& graph_;
  Node* before_;
  std::vector<Node*> emitted_;
  std::unordered_set<const Node*> made_;  // emitted_ as a set (a chain of views emits many)
};

inline Value ref(Node* n) {
  return Value::node_ref(n);
}

}  // namespace inplace
