// sample_row: generation's draw of one token from a row of logits (program/generate.cpp), an op
// so that each backend computes it where the logits are and only 24 bytes reach the host. Its
// result is int64 [token, total weight, first NaN's index] by the arithmetic of
// ops/sampling_weight.h; graphs do not use it.
#include <cmath>

#include "ops/registry.h"
#include "ops/sampling_weight.h"

namespace inplace {

void register_sample_row_ops(Registry& r) {
  r.add_out(
      "sample_row(Tensor logits, float temperature, int draw) -> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("sample_row");
        IP_CHECK(x.dim() == 1 && x.numel() >= 1, kShapeMismatch,
                 "[sample_row] logits must be one non-empty row, got shape ", shape_str(x.shape()));
        IP_CHECK(x.numel() <= sampling::kMaxTokens, kUnsupported, "[sample_row] rows of at most ",
                 sampling::kMaxTokens, " tokens, got ", x.numel());
        IP_CHECK(is_floating(x.dtype()), kDTypeMismatch,
                 "[sample_row] logits must be floating point, got ", dtype_name(x.dtype()));
        const double t = a[1].as_double("temperature");
        IP_CHECK(std::isfinite(t) && t > 0, kInvalidArgument,
                 "[sample_row] temperature must be finite and > 0, got ", t);
        const int64_t draw = a[2].as_int("draw");
        IP_CHECK(draw >= 0 && draw < (int64_t{1} << sampling::kDrawBits), kInvalidArgument,
                 "[sample_row] draw must be in [0, 2^53), got ", draw);
        return std::vector<Tensor>{Tensor::meta({3}, DType::kInt64)};
      },
      nullptr);
}

}  // namespace inplace
