#include "passes/functional_forms.h"

#include "passes/op_info.h"

namespace inplace {

bool is_inplace_spelling(const OpDef& op) {
  const std::string& n = op.schema.name;
  return n.size() > 1 && n.back() == '_' && n.rfind("__", 0) != 0;
}

FunctionalForm functional_form(const Node& node, const OpDef& op) {
  const std::string& name = op.schema.name;
  FunctionalForm f;
  std::vector<int> muts = op.schema.mutated_args();
  IP_CHECK(muts.size() == 1, kUnsupported, "[inplace_to_out_of_place] node '", node.name, "': op '",
           op.schema.full_name(), "' writes ", muts.size(),
           " arguments; only ops that write one argument can be made functional");
  f.mutated_arg = muts[0];
  // The rewrite computes what the op writes; a result of its own besides would be lost.
  IP_CHECK(op.schema.returns.empty() ||
               (op.schema.returns.size() == 1 && op.schema.aliased_arg_of_return(0) == muts[0]),
           kUnsupported, "[inplace_to_out_of_place] node '", node.name, "': op '",
           op.schema.full_name(),
           "' writes an argument and also returns a new value; only ops that return nothing or "
           "what they write can be made functional");
  if (name == "setitem") {
    f.kind = FunctionalForm::Kind::kSetitem;
    return f;
  }
  if (name == "copy_") {
    f.kind = FunctionalForm::Kind::kCopy;
    return f;
  }
  if (name == "fill_" || name == "zero_") {
    f.kind = FunctionalForm::Kind::kFill;
    return f;
  }
  const Registry& reg = Registry::get();
  std::string twin_name;
  if (!op.functional.empty()) {
    const OpDef* twin = reg.find(op.functional);
    IP_CHECK(twin != nullptr, kUnsupported, "[inplace_to_out_of_place] node '", node.name,
             "': the functional twin '", op.functional, "' of '", op.schema.full_name(),
             "' is not registered");
    f.twin_target = canonical_target(*twin);
    twin_name = twin->schema.name;
  } else {
    IP_CHECK(is_inplace_spelling(op), kUnsupported, "[alias_analysis] node '", node.name,
             "': custom op '", op.schema.full_name(), "' writes its argument '",
             op.schema.args[f.mutated_arg].name,
             "' but has no functional twin to compute the new value out of place");
    twin_name = name.substr(0, name.size() - 1);
    IP_CHECK(has_op(twin_name), kUnsupported, "[inplace_to_out_of_place] node '", node.name, "': '",
             name, "' is not supported: there is no out-of-place op '", twin_name, "'");
    const OpDef* same =
        op.schema.overload.empty() ? nullptr : reg.find(twin_name + "." + op.schema.overload);
    f.twin_target = same ? canonical_target(*same) : "aten." + twin_name;
  }
  for (const OpDef* twin : reg.overloads(twin_name))
    IP_CHECK(twin->kind != OpKind::kView, kUnsupported, "[inplace_to_out_of_place] node '",
             node.name, "': '", name,
             "' changes the shape or strides of its input in place; not supported");
  return f;
}

}  // namespace inplace
