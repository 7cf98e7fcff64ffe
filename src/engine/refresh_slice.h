// The refresh's fast form of the view every prefix attention reads, `cache[:, :, :p + 1]`
// (attend_filled_prefix): a getitem whose index is full slices and one slice whose stop is the
// call's runtime value. Its view is the input sliced along that dim with Python's rules, which
// Tensor::slice applies as getitem does: no index parsing a call.
#pragma once
#include <optional>

#include "backend/plan.h"

namespace inplace {

// The dim of the slice whose stop is step `s`'s one runtime int, when `s` is a getitem view of
// that form (its argument template `args`); nullopt for every other step.
std::optional<int> runtime_stop_dim(const Step& s, const std::vector<Value>& args);

// x[:, ..., :stop] with the slice at `dim`: the view getitem gives (a negative stop counts from
// the end; the stop is clamped to the dim).
Tensor slice_to_stop(const Tensor& x, int dim, int64_t stop);

}  // namespace inplace
