// The CUDA kernel of sample_row (sample_row.cu) for float32, bfloat16 and float16 rows; others
// run on the host. Generation's sampling over every token calls it (program/next_token.cpp).
#include "kernels/cuda/registration.h"
#include "kernels/cuda/sample_row.h"

namespace inplace::cuda {

namespace {

std::string sample_row_supports(const Args& a) {
  const DType d = a[0].tensor.dtype();
  if (d != DType::kFloat32 && d != DType::kBFloat16 && d != DType::kFloat16)
    return "sample_row on the device takes float32, bfloat16 or float16";
  return {};
}

void run_sample_row(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& x = a[0].tensor;
  SampleRow s;
  s.logits = x.data_ptr();
  s.dtype = x.dtype();
  s.n = x.numel();
  s.stride = x.stride(0);
  s.temperature = a[1].as_double("temperature");
  s.draw = static_cast<uint64_t>(a[2].as_int("draw"));
  s.out = outs[0].data<int64_t>();
  sample_row(s, ctx.queue);
}

}  // namespace

void register_sample_row_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "sample_row", run_sample_row, sample_row_supports);
}

}  // namespace inplace::cuda
