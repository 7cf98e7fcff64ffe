#include "ops/renamed_ops.h"

namespace inplace {

const std::vector<RenamedOp>& renamed_ops() {
  // The bf16-weight names gave the weight's dtype, which is now the weight's own attribute
  // (issue 28); the residual epilogue is fused_linear's residual argument.
  static const std::vector<RenamedOp> kRenamed = {
      {"linear_bf16_weight", "fused_linear"},
      {"linear_bf16_weight_add", "fused_linear"},
      {"swiglu_bf16_weight", "gated_mlp"},
      {"rms_norm_linear_bf16_weight", "rms_norm_linear"},
      {"rms_norm_swiglu_bf16_weight", "rms_norm_gated_mlp"},
      {"embedding_bf16_weight", "fused_embedding"},
  };
  return kRenamed;
}

const OpDef* find_op_or_renamed(const std::string& full_name) {
  const Registry& reg = Registry::get();
  if (const OpDef* op = reg.find(full_name)) return op;
  for (const RenamedOp& r : renamed_ops())
    if (full_name == r.old_name) return reg.find(r.new_name);
  return nullptr;
}

bool append_defaults(const Schema& schema, Args* args) {
  for (size_t k = args->size(); k < schema.args.size(); ++k) {
    if (!schema.args[k].default_value) return false;
    args->push_back(*schema.args[k].default_value);
  }
  return true;
}

void register_renamed_ops(Registry& r) {
  for (const RenamedOp& op : renamed_ops()) r.add_alias(op.old_name, op.new_name);
}

}  // namespace inplace
