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

bool is_number_one(const Value& v) {
  return (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kFloat) &&
         v.as_double("is_number_one") == 1.0;
}

bool is_view_or_reshape(const Node* n) {
  const std::string name = op_name(n);
  return (name == "view" || name == "reshape") && n->args.size() == 2 && n->kwargs.empty() &&
         n->args[0].is_node();
}

bool is_attention(const Node* n) {
  const std::string op = op_name(n);
  return op == "scaled_dot_product_attention" || op == "rounded_attention";
}

std::vector<std::pair<std::string, Value>> keyword_args(const ResolvedCall& rc) {
  std::vector<std::pair<std::string, Value>> out;
  const std::vector<ArgSpec>& specs = rc.op->schema.args;
  for (size_t i = 0; i < specs.size() && i < rc.args.size(); ++i)
    if (specs[i].kwarg_only) out.emplace_back(specs[i].name, rc.args[i]);
  return out;
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

bool cast_only_to_dtype(const ResolvedCall& rc, DType dtype) {
  const Schema& s = rc.op->schema;
  for (size_t i = 1; i < rc.args.size() && i < s.args.size(); ++i) {
    const std::string& name = s.args[i].name;
    const Value& v = rc.args[i];
    if (v.is_none()) continue;
    if (name == "dtype" && v.kind == Value::Kind::kDType && v.dtype == dtype) continue;
    if ((name == "non_blocking" || name == "copy") && v.kind == Value::Kind::kBool && !v.b)
      continue;
    if (name == "layout" && v.kind == Value::Kind::kString && v.s == "torch.strided") continue;
    if (name == "device" && v.kind == Value::Kind::kDevice && v.s == "cpu") continue;
    if (name == "pin_memory" && v.kind == Value::Kind::kBool && !v.b) continue;
    return false;
  }
  return true;
}

bool getitem_inserts_unit_dims_only(const Node* n) {
  if (op_name(n) != "getitem" || n->args.size() != 2 || !n->args[0].is_node()) return false;
  const Value& index = n->args[1];
  if (index.is_none()) return true;
  if (index.kind == Value::Kind::kSlice) return index.is_full_slice();
  if (index.kind != Value::Kind::kTuple && index.kind != Value::Kind::kList) return false;
  int ellipses = 0;
  for (const Value& item : index.items) {
    if (item.kind == Value::Kind::kEllipsis) {
      ++ellipses;
      continue;
    }
    if (!item.is_none() && !item.is_full_slice()) return false;
  }
  return ellipses <= 1;
}

int64_t int_arg(const Node* n, size_t i, int64_t fallback) {
  if (n->args.size() <= i) return fallback;
  const Value& v = n->args[i];
  if (v.is_none()) return fallback;
  return v.kind == Value::Kind::kInt ? v.i : INT64_MIN;
}

}  // namespace inplace
