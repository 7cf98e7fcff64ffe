// The CUDA kernel of linear_bf16_weight(x, w, bias): the product reads the bf16 weight where
// it lies (the step the fuse_weight_casts pass makes of `linear(x, w.to(float32))`).
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"

namespace inplace::cuda {

namespace {

constexpr const char* kOp = "linear_bf16_weight";

// x as rows of unit stride along k, each row `stride` apart; false when it is not.
bool rows_of(const Tensor& x, int64_t k, int64_t* stride) {
  *stride = k;
  if (x.numel() == 0) return true;
  if (x.size(-1) > 1 && x.stride(-1) != 1) return false;
  // Leading dims must collapse into one stride.
  int64_t expect = -1;
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (expect < 0) {
      *stride = x.stride(d);
      expect = x.stride(d) * x.size(d);
    } else if (x.stride(d) != expect) {
      return false;
    } else {
      expect *= x.size(d);
    }
  }
  return true;
}

std::string supports(const Args& a) {
  int64_t stride = 0;
  const Tensor& x = a[0].tensor;
  const Tensor& w = a[1].tensor;
  if (!w.is_contiguous()) return "a weight that is not contiguous";
  if (!rows_of(x, w.size(1), &stride)) return "an input whose rows are not evenly strided";
  if (!a[2].is_none() && !a[2].tensor.is_contiguous()) return "a bias that is not contiguous";
  return "";
}

void run(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& x = a[0].tensor;
  const Tensor& w = a[1].tensor;
  const Tensor& y = outs[0];
  const int64_t k = w.size(1), n = w.size(0);
  const int64_t rows = k ? x.numel() / k : 0;
  int64_t stride = 0;
  IP_CHECK(rows_of(x, k, &stride) && y.is_contiguous(), kUnsupported, "[cuda] ", kOp, ": input ",
           shape_str(x.shape()), " with strides ", shape_str(x.strides()),
           " is not read as evenly strided rows");
  const float* bias = a[2].is_none() ? nullptr : static_cast<const float*>(a[2].tensor.data_ptr());
  gemv_bf16(static_cast<const float*>(x.data_ptr()), stride, rows, w.data_ptr(), k, n, bias,
            static_cast<float*>(y.data_ptr()), n, ctx.stream);
}

}  // namespace

void register_linear_lowp_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, kOp, run, supports);
}

}  // namespace inplace::cuda
