// rotary_embedding on CUDA against the cpu kernel, bitwise, at float32, bfloat16 and float16:
// the same float operations in the same order, each product and the sum rounded to the dtype
// (no fma contraction). Shapes as a decoder has them (q [1, heads, rows, d] as a transposed
// view, cos/sin one position broadcast over the heads) and strided views. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor run_on(DeviceType where, const std::vector<Value>& args) {
  ResolvedCall call = resolve_call("inplace.rotary_embedding", args, {}, "test");
  const Tensor m = call.op->infer(call.args)[0];
  const Kernel* k = KernelTable::get().find(*call.op, where);
  EXPECT_NE(k, nullptr);
  if (where == DeviceType::kCpu) {
    Tensor out = Tensor::empty(m.shape(), m.dtype());
    (*k)(call.args, {out}, KernelContext{});
    return out;
  }
  std::vector<Value> gpu = call.args;
  for (Value& v : gpu)
    if (v.is_tensor()) v = Value::from_tensor(to_cuda_view(v.tensor));
  Tensor out = Tensor::empty(m.shape(), m.dtype(), Device::cuda());
  (*k)(gpu, {out}, KernelContext{});
  return out.to_device(Device::cpu());
}

TEST(CudaRotary, BitwiseTheCpuKernelAtEveryFloatDtype) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 2900;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (const Shape& s : {Shape{1, 1, 16, 64}, Shape{1, 3, 4, 128}, Shape{2, 5, 2, 16}}) {
      const int64_t heads = s[2], rows = s[1], d = s[3];
      for (Layout l : {Layout::kContiguous, Layout::kStrided}) {
        // x [1, heads, rows, d] as the transpose of q [1, rows, heads, d] (or a strided view).
        const Tensor q = random_view({s[0], rows, heads, d}, dt, seed++, l);
        const Tensor x = q.transpose(1, 2);
        const Tensor c = random_tensor({1, 1, rows, d}, dt, seed++);
        const Tensor sn = random_tensor({1, 1, rows, d}, dt, seed++);
        const Tensor want = run_on(DeviceType::kCpu, {Value::from_tensor(x), Value::from_tensor(c),
                                                      Value::from_tensor(sn)});
        const Tensor got = run_on(DeviceType::kCuda, {Value::from_tensor(x), Value::from_tensor(c),
                                                      Value::from_tensor(sn)});
        EXPECT_TRUE(close(got, want, 0))
            << "rotary_embedding " << dtype_name(dt) << " x " << shape_str(x.shape())
            << (l == Layout::kStrided ? " strided" : " contiguous");
      }
    }
}

}  // namespace
