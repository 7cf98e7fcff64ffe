// The epilogue product of decode attention (a layer's attention and its o_proj in one launch,
// attention_product.cu) against the cpu ops run one after the other: both results (the
// attention's and the product's), four head layouts, key counts read on the device from 1 to
// 700, with and without bias and residual, the product's rows over one or several splits.
// Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "engine/device_state.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}

struct Layout {
  int64_t heads, kv_heads, head_dim, n;
};

TEST(CudaAttentionProduct, EqualsAttentionThenItsProduct) {
  IP_REQUIRE_CUDA();
  const Value gqa = Value::boolean(true);
  const int64_t s_max = 700;
  uint32_t seed = 1300;
  DeviceWorkspace workspace;
  workspace.device = Device::cuda();
  for (const Layout& l : {Layout{16, 4, 64, 1024}, Layout{8, 8, 16, 72}, Layout{4, 2, 128, 1000},
                          Layout{32, 8, 32, 96}}) {
    const int64_t H = l.heads, E = l.head_dim, cols = H * E, n = l.n;
    const Tensor q = random_tensor({1, H, 1, E}, DType::kFloat32, seed++);
    const Tensor k = random_tensor({1, l.kv_heads, s_max, E}, DType::kFloat32, seed++);
    const Tensor v = random_tensor({1, l.kv_heads, s_max, E}, DType::kFloat32, seed++);
    const Tensor w = random_tensor({n, cols}, DType::kBFloat16, seed++);
    const Tensor b = random_tensor({n}, DType::kFloat32, seed++);
    const Tensor r = random_tensor({1, 1, n}, DType::kFloat32, seed++);
    const Tensor len = Tensor::empty({1}, DType::kInt64, Device::cuda());
    const Tensor out = Tensor::empty({1, H, 1, E}, DType::kFloat32, Device::cuda());
    const Tensor x = out.transpose(1, 2).reshape({1, 1, cols});
    const Tensor y = Tensor::empty({1, 1, n}, DType::kFloat32, Device::cuda());
    ResolvedCall sdpa = resolve_call("scaled_dot_product_attention",
                                     {T(to_cuda_view(q)), T(to_cuda_view(k)), T(to_cuda_view(v))},
                                     {{"enable_gqa", gqa}}, "test");
    const Tensor wd = to_cuda_view(w), bd = to_cuda_view(b), rd = to_cuda_view(r);
    for (bool add : {true, false})
      for (bool bias : {false, true}) {
        const std::string target =
            add ? "inplace.linear_bf16_weight_add" : "inplace.linear_bf16_weight";
        std::vector<Value> args = {T(x), T(wd), bias ? T(bd) : Value::none()};
        if (add) args.push_back(T(rd));
        ResolvedCall linear = resolve_call(target, args, {}, "test");
        const ProductKernel* kernel =
            KernelTable::get().find_epilogue_product(*sdpa.op, *linear.op, DeviceType::kCuda);
        ASSERT_NE(kernel, nullptr) << target;
        for (int64_t keys : {1, 64, 65, 200, 513, 700}) {
          SCOPED_TRACE("heads " + std::to_string(H) + " head dim " + std::to_string(E) + " n " +
                       std::to_string(n) + " keys " + std::to_string(keys) + " " + target +
                       (bias ? " with bias" : ""));
          device_allocator(Device::cuda()).copy_from_host(len.data_ptr(), &keys, sizeof keys);
          KernelContext c;
          c.extent = static_cast<const int64_t*>(len.data_ptr());
          c.workspace = &workspace;
          const std::vector<Tensor> outs = {out}, ys = {y};
          ASSERT_TRUE((*kernel)({&sdpa.args, &outs, c}, {&linear.args, &ys, KernelContext{}}));
          // The cpu: attention over the filled prefix, then the product of its result.
          ResolvedCall a = resolve_call("scaled_dot_product_attention",
                                        {T(q), T(k.slice(2, 0, keys)), T(v.slice(2, 0, keys))},
                                        {{"enable_gqa", gqa}}, "test");
          const Tensor want_out = Tensor::empty({1, H, 1, E}, DType::kFloat32);
          a.op->out(a.args, {want_out});
          std::vector<Value> cpu_args = {T(want_out.transpose(1, 2).reshape({1, 1, cols})), T(w),
                                         bias ? T(b) : Value::none()};
          if (add) cpu_args.push_back(T(r));
          ResolvedCall p = resolve_call(target, cpu_args, {}, "test");
          const Tensor want_y = Tensor::empty({1, 1, n}, DType::kFloat32);
          p.op->out(p.args, {want_y});
          EXPECT_TRUE(close(out.to_device(Device::cpu()), want_out, 1e-4)) << "attention";
          EXPECT_TRUE(close(y.to_device(Device::cpu()), want_y, 1e-4)) << "product";
        }
      }
  }
}

}  // namespace
