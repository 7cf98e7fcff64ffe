// The values the plan builder works with: metadata of every tensor (shape, strides, offset in
// its buffer, and the bound of a dynamic size), runtime scalars for integers, and the steps and
// refresh entries each op call turns into.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/build_state.h"

namespace inplace {

// A value during plan building. Tensors are metas at the example's values; ints are the
// example's values. `sym` names the runtime scalar an int (or a 1-element integer tensor) is.
struct BVal {
  Value v;
  std::vector<BVal> items;  // parallel to v.items for sequences
  BufferId buffer{BufferKind::kArena, -1};
  int32_t dyn = -1;        // the dynamic value whose metadata the refresh recomputes per call
  bool shape_dyn = false;  // its shape (not just its offset) may change between calls
  Shape bound;             // the largest extent of every dim over all calls (== shape when static)
  int32_t sym = -1;
};

// One op call with its arguments bound to the schema and its leaves traced back.
struct CallInfo {
  const Node* node = nullptr;
  const OpDef* op = nullptr;
  std::string arg_name;  // while binding: the argument being bound
  bool index_arg = false;
  Args args;  // tensors as metas, runtime ints at their example values
  std::vector<TensorSlot> tensors;
  std::vector<const BVal*> inputs;  // parallel to tensors
  std::vector<IntSlot> ints;
  std::vector<std::string> int_args;  // parallel to ints: the argument each sits in
  bool dyn_input = false;
};

class PlanValues {
 public:
  explicit PlanValues(BuildState& st) : st_(st) {}

  BVal add_input(const std::string& name, const Tensor& example);
  BVal constant(const Tensor& t, const std::string& name);
  BVal literal(const Value& v);
  TensorRef ref_of(const BVal& b) const;
  // The runtime scalar a 1-element integer tensor holds; refuses (naming node and argument)
  // when its value is not known before the call.
  int32_t scalar_of(const BVal& b, const std::string& node, const std::string& arg);
  int64_t example_value(int32_t scalar) const { return examples_[scalar]; }
  SymRange range(int32_t scalar) const { return ranges_[scalar]; }
  // The call as a step (or as a view, a runtime scalar, a folded number).
  BVal evaluate(CallInfo& ci);
  void add_output(const BVal& b, size_t j);

 private:
  int32_t new_scalar(SymExpr e, std::string name, SymRange range, int64_t example);
  int32_t new_dyn() { return st_.plan.num_dyn++; }
  BVal metadata_call(CallInfo& ci);
  // The op's result metas; a tensor passed for a number must not change them (refused).
  std::vector<Tensor> infer_results(const CallInfo& ci) const;
  bool static_contiguous_view(const CallInfo& ci) const;
  bool scalar_arithmetic(CallInfo& ci, BVal* out);
  BVal view_call(CallInfo& ci, const Value& result);
  BVal compute_call(CallInfo& ci, std::vector<Tensor> metas, StepKind kind);
  Shape view_bound(const CallInfo& ci, const BVal& base, const Value& result, size_t leaf);
  std::vector<Tensor> compute_bounds(const CallInfo& ci, const std::vector<Tensor>& metas);
  bool output_depends_on_ints(const CallInfo& ci, const std::vector<Tensor>& metas, bool view);
  // Whether the results' shapes change with the extents of the inputs whose shape is dynamic
  // (attention's output over a runtime-length prefix does not): probes the shape function.
  bool output_depends_on_shapes(const CallInfo& ci, const std::vector<Tensor>& metas);
  Args bound_args(const CallInfo& ci, bool view) const;
  Step step_of(const CallInfo& ci, StepKind kind) const;
  int32_t operand_scalar(const Value& v, const CallInfo& ci, const std::string& arg);
  std::string scalar_name(const SymExpr& e) const;

  BuildState& st_;
  std::vector<int64_t> examples_;  // by scalar
  std::vector<SymRange> ranges_;   // by scalar
  std::vector<Tensor> example_inputs_;
  std::map<std::pair<int, int64_t>, int32_t> reads_;  // (input, element) -> scalar
  std::map<const Storage*, BufferId> constant_ids_;
  std::map<std::string, BufferId> meta_constant_ids_;
  std::vector<Shape> dyn_bounds_;  // by dynamic value
};

}  // namespace inplace
