// torch.einsum's equation language read against operand shapes: which label each dim of each
// operand carries, the output's labels and every label's (broadcast) size. Both the shape
// inference and the computation in einsum_ops.cpp start from this one reading.
//
// Labels: 'A'..'Z' are 0..25 and 'a'..'z' are 26..51 (so an implicit output lists upper case
// first, as torch does); the dims covered by "..." get kNumLetters + j, aligned right across
// operands so that they broadcast like NumPy batch dims.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

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

}  // namespace inplace
