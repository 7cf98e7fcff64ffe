#include "engine/refresh_slice.h"

namespace inplace {

std::optional<int> runtime_stop_dim(const Step& s, const std::vector<Value>& args) {
  if (s.kind != StepKind::kView || !s.op || s.op->schema.name != "getitem" || s.outs.size() != 1 ||
      s.ints.size() != 1 || s.tensors.size() != 1 || args.size() != 2 ||
      s.tensors[0].path != std::vector<int>{0} || !args[0].is_tensor())
    return std::nullopt;
  const Value& index = args[1];
  if (index.kind != Value::Kind::kTuple && index.kind != Value::Kind::kList) return std::nullopt;
  const std::vector<int>& at = s.ints[0].path;  // {1, dim, 1}: the stop of item `dim`
  if (at.size() != 3 || at[0] != 1 || at[2] != 1 || at[1] < 0 ||
      static_cast<size_t>(at[1]) >= index.items.size() ||
      static_cast<int64_t>(index.items.size()) > args[0].tensor.dim())
    return std::nullopt;
  for (size_t k = 0; k < index.items.size(); ++k) {
    const Value& item = index.items[k];
    if (static_cast<int>(k) != at[1]) {
      if (!item.is_full_slice()) return std::nullopt;
      continue;
    }
    if (item.kind != Value::Kind::kSlice || item.items.size() != 3 || !item.items[0].is_none() ||
        !item.items[2].is_none() || item.items[1].kind != Value::Kind::kInt)
      return std::nullopt;
  }
  return at[1];
}

Tensor slice_to_stop(const Tensor& x, int dim, int64_t stop) {
  return x.slice(dim, std::nullopt, stop, 1);
}

}  // namespace inplace
