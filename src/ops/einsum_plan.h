// torch.einsum's equation language read against operand shapes: which label each dim of each
// operand carries, the output's labels and every label's (broadcast) size. Both the shape
// inference (einsum_ops.cpp) and the kernels start from this one reading.
//
// Labels: 'A'..'Z' are 0..25 and 'a'..'z' are 26..51 (so an implicit output lists upper case
// first, as torch does); the dims covered by "..." get kNumLetters + j, aligned right across
// operands so that they broadcast like NumPy batch dims.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace {

inline constexpr int kNumLetters = 52;

struct EinsumPlan {
  std::vector<std::vector<int>> labels;  // per operand, one label per dim
  std::vector<int> output;               // the result's labels, in order
  std::vector<int64_t> sizes;            // per label (indexed by label), -1 if unused
  Shape out_shape;

  int num_labels() const { return static_cast<int>(sizes.size()); }
  // "b", "j" or "...[1]" for error messages.
  static std::string label_name(int label);
};

// Throws kInvalidArgument / kShapeMismatch naming the equation and the operand shapes.
EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes);

// einsum(equation, tensors, path)'s arguments: the operands, and the plan of the equation
// against them (checking that the operands share a dtype, and no product of bools).
std::vector<Tensor> einsum_operands(const Args& a);
EinsumPlan plan_einsum(const Args& a, const std::vector<Tensor>& operands);
// The result's dtype: the operands', except that one integral operand whose labels are
// summed gives int64 (torch runs torch.sum there; products keep the operands' dtype).
DType einsum_result_dtype(const EinsumPlan& p, const std::vector<Tensor>& operands);

}  // namespace inplace
