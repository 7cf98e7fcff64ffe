#include "passes/op_info.h"

#include <algorithm>

namespace inplace {

ResolvedCall resolve_node(const Node& node) {
  return resolve_call(node.target, node.args, node.kwargs, node.name);
}

std::string canonical_target(const OpDef& op) {
  const std::string& name = op.schema.name;
  if (name == "getitem" || name == "setitem") return "_operator." + name;
  return "aten." + name + "." + (op.schema.overload.empty() ? "default" : op.schema.overload);
}

std::string op_name(const Node* n) {
  std::string overload;
  return n->is_call() ? Registry::get().canonical_name(n->target, &overload) : std::string();
}

bool has_op(const std::string& name) {
  return !Registry::get().overloads(name).empty();
}

bool returns_tensor(const OpDef& op) {
  return !op.schema.returns.empty() && op.schema.returns[0].type == "Tensor";
}

Node* Emitter::call(const std::string& target, std::vector<Value> args,
                    std::vector<std::pair<std::string, Value>> kwargs,
                    const std::string& name_hint) {
  Node* n = graph_.insert_before(before_, NodeOp::kCallFunction, target, std::move(args),
                                 std::move(kwargs), name_hint);
  emitted_.push_back(n);
  made_.insert(n);
  return n;
}

bool Emitter::made(const Node* n) const {
  return made_.count(n) != 0;
}

}  // namespace inplace
