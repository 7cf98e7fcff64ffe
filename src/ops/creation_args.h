// Argument decoding of the creation ops (factories, arange, cat, stack, roll, flip), read by
// their declarations (shape/dtype rules) and by every backend's kernels: the value each
// fill-shaped factory writes, arange's range, cat/stack's inputs and dim, roll/flip's dims.
#pragma once
#include <cstdint>
#include <vector>

#include "core/scalar.h"
#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::creation {

// A factory whose every element is one value: args[fill_index], or `constant` when it is < 0.
struct FilledDecl {
  const char* name;
  int fill_index;
  int64_t constant;
};
inline constexpr FilledDecl kFilledOps[] = {
    {"zeros", -1, 0},        {"ones", -1, 1},       {"empty", -1, 0},     {"full", 1, 0},
    {"scalar_tensor", 0, 0}, {"zeros_like", -1, 0}, {"ones_like", -1, 1}, {"empty_like", -1, 0},
    {"full_like", 1, 0},     {"new_zeros", -1, 0},  {"new_ones", -1, 1},  {"new_empty", -1, 0},
    {"new_full", 2, 0},
};
inline Scalar filled_value(const FilledDecl& d, const Args& a) {
  return d.fill_index >= 0 ? a[d.fill_index].as_scalar(d.name) : Scalar(d.constant);
}

// `v` as a dtype; `fallback` when none.
DType dtype_or(const Value& v, DType fallback, const char* op);

// arange(end), arange.start(start, end), arange.start_step(start, end, step), each with dtype
// after: the result's dtype and size, and the start and step the kernel writes from (an
// integral result steps in int64).
enum class ArangeForm { kEnd, kStart, kStartStep };
struct ArangeSpec {
  Scalar start, end, step;
  DType dtype;
  int64_t size;
};
ArangeSpec arange_spec(const Args& a, ArangeForm form);

// cat(tensors, dim) and stack(tensors, dim): the inputs, the wrapped dim, the result's shape and
// promoted dtype (torch.cat's checks: 1-D empty tensors are skipped but still promote).
struct CatSpec {
  std::vector<Tensor> inputs;
  int64_t dim = 0;
  Shape shape;
  DType dtype;
};
CatSpec cat_spec(const Args& a);
CatSpec stack_spec(const Args& a);

// Wrapped roll dims; empty dims (roll the flattened tensor) needs exactly one shift.
std::vector<int64_t> roll_dims(const Tensor& self, const std::vector<int64_t>& shifts,
                               const std::vector<int64_t>& dims);
// Wrapped flip dims (each once); none for a 0-dim tensor.
std::vector<int64_t> flip_dims(const Tensor& self, const std::vector<int64_t>& dims);

}  // namespace inplace::creation
