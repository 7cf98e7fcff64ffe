// An op's results over metadata only (no data is read): its shape rule when it has one, else
// its eager function, which for views, casts and index reads works on metas.
#pragma once
#include <vector>

#include "engine/number_operands.h"
#include "ops/registry.h"

namespace inplace {

// A tensor passed for a number (a 0-d tensor t in torch.full((2,), t) or x.add(y, alpha=t)) is
// an operand the kernel reads on every call; over metas it has no value, so shape rules read
// it as 1 (the plan builder checks that the shapes do not depend on it).
std::vector<Tensor> result_metas(const OpDef& op, const Args& args);
// The value a view op returns on metas (a tensor or a list of views).
Value view_metas(const OpDef& op, const Args& args);
// Walks every leaf of `v` with its path of item indices.
template <typename F>
void for_each_leaf(Value& v, std::vector<int>& path, F&& f) {
  if (v.items.empty() || v.is_tensor()) {
    f(v, path);
    return;
  }
  for (size_t i = 0; i < v.items.size(); ++i) {
    path.push_back(static_cast<int>(i));
    for_each_leaf(v.items[i], path, f);
    path.pop_back();
  }
}
Value* leaf_at(std::vector<Value>& args, const std::vector<int>& path);
const Value* leaf_at(const std::vector<Value>& args, const std::vector<int>& path);

}  // namespace inplace
