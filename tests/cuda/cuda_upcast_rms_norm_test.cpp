// upcast_rms_norm on CUDA against the cpu kernel, byte for byte: bfloat16, float16 and float32
// inputs, the weight of the input's dtype or float32 (weight_in_float), rows of every length a
// decoder has (a head of 64 or 128, a hidden row of 1024 to 4096, and odd ones), one row and
// many, contiguous inputs and the strided views a per-head norm reads (a head view of a
// product's columns, a transposed or every-second-element view), a zero row (rsqrt(eps)). And
// rms_norm_rotary (the norm of each head, then its rotary) likewise: heads of 32 to 256 as the
// transposed head views of a product's columns, cos and sin of one position broadcast over
// them. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/cuda/launch_groups.h"
#include "run_op.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// Values uniform in [-scale, scale] (not on a grid, so that every rounding point shows), row 1
// of each group of three zero when `zero_row`.
Tensor draw(const Shape& shape, DType dt, uint32_t seed, double scale, bool zero_row = false) {
  Tensor f = Tensor::empty(shape, DType::kFloat64);
  uint32_t x = seed * 2654435761u + 11;
  const int64_t d = shape.back();
  for (int64_t i = 0; i < f.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    double v = scale * (static_cast<double>(x >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0);
    if (zero_row && (i / d) % 3 == 1) v = 0.0;
    f.data<double>()[i] = v;
  }
  return f.to(dt);
}

bool bytes_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

#ifdef INPLACE_WITH_CUDA
// Two steps of `op` through its pair kernel (one launch), their results back on the cpu.
std::pair<Tensor, Tensor> run_pair_on_cuda(const char* op, const std::vector<Value>& a1,
                                           const std::vector<Value>& a2) {
  ResolvedCall c1 = resolve_call(op, a1, {}, "test"), c2 = resolve_call(op, a2, {}, "test");
  const cuda::PairKernel* pair = cuda::LaunchKernels::get().find_pair(*c1.op);
  EXPECT_NE(pair, nullptr) << op;
  const Tensor m1 = c1.op->infer(c1.args)[0], m2 = c2.op->infer(c2.args)[0];
  std::vector<Tensor> o1{Tensor::empty(m1.shape(), m1.dtype(), Device::cuda())},
      o2{Tensor::empty(m2.shape(), m2.dtype(), Device::cuda())};
  (*pair)(to_cuda_args(c1.args), o1, KernelContext{}, to_cuda_args(c2.args), o2, KernelContext{});
  return {o1[0].to_device(Device::cpu()), o2[0].to_device(Device::cpu())};
}
#endif

std::vector<Value> args(const Tensor& x, const Tensor& w, double eps, bool in_float) {
  return {Value::from_tensor(x), Value::from_tensor(w), Value::floating(eps),
          Value::boolean(in_float)};
}

void expect_equal(const Tensor& x, const Tensor& w, double eps, bool in_float,
                  const std::string& what) {
  const auto a = args(x, w, eps, in_float);
  const Tensor want = run_op_on(DeviceType::kCpu, "upcast_rms_norm", a);
  const Tensor got = run_op_on(DeviceType::kCuda, "upcast_rms_norm", a);
  EXPECT_TRUE(bytes_equal(got, want))
      << what << " x " << shape_str(x.shape()) << " " << dtype_name(x.dtype())
      << (in_float ? " weight_in_float" : "");
}

TEST(CudaUpcastRmsNorm, BitwiseTheCpuKernelOverRowLengthsAndDtypes) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3600;
  for (DType dt : {DType::kBFloat16, DType::kFloat16, DType::kFloat32})
    for (bool in_float : {false, true})
      for (const Shape& s :
           {Shape{1, 1, 1024}, Shape{1, 1, 16, 64}, Shape{1, 1, 8, 128}, Shape{2, 3, 4096},
            Shape{5, 7}, Shape{37, 1}, Shape{3, 33}, Shape{1, 40, 100}}) {
        const DType wt = in_float ? DType::kFloat32 : dt;
        const double scale = dt == DType::kFloat16 ? 8.0 : 30.0;
        const Tensor x = draw(s, dt, seed++, scale, true);
        const Tensor w = draw({s.back()}, wt, seed++, 2.0);
        expect_equal(x, w, 1e-6, in_float, "contiguous");
      }
}

TEST(CudaUpcastRmsNorm, BitwiseTheCpuKernelOnStridedViews) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3700;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t d : {64, 128}) {
      // The q heads of a fused q/k/v product's columns: [1, 1, heads, d] over a wider row.
      const int64_t heads = 16, kv = 4;
      const Tensor qkv = draw({1, 1, (heads + 2 * kv) * d}, dt, seed++, 4.0);
      const Tensor q = qkv.slice(2, 0, heads * d).view({1, 1, heads, d});
      const Tensor k = qkv.slice(2, heads * d, (heads + kv) * d).view({1, 1, kv, d});
      const Tensor w = draw({d}, dt, seed++, 2.0);
      expect_equal(q, w, 1e-6, false, "q heads of a product");
      expect_equal(k, w, 1e-6, false, "k heads of a product");
      for (Layout l : {Layout::kTransposed, Layout::kStrided}) {
        Tensor x = random_view({3, 5, d}, dt, seed++, l);
        expect_equal(x, w, 1e-5, false,
                     l == Layout::kStrided ? "every second element" : "transposed");
      }
    }
}

TEST(CudaRmsNormRotary, BitwiseTheCpuKernelOverHeadsAndDtypes) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3800;
  for (DType dt : {DType::kBFloat16, DType::kFloat16, DType::kFloat32})
    for (bool in_float : {false, true})
      for (int64_t d : {32, 64, 128, 256}) {
        const int64_t heads = 8, kv = 2, rows = 1 + (d == 64);  // one query row, or two
        const Tensor qkv = draw({1, rows, (heads + 2 * kv) * d}, dt, seed++, 6.0, true);
        // q [1, heads, rows, d]: a transposed head view of the product's first columns.
        const Tensor q = qkv.slice(2, 0, heads * d).view({1, rows, heads, d}).transpose(1, 2);
        const Tensor k =
            qkv.slice(2, heads * d, (heads + kv) * d).view({1, rows, kv, d}).transpose(1, 2);
        const Tensor w = draw({d}, in_float ? DType::kFloat32 : dt, seed++, 2.0);
        const Tensor c = draw({1, 1, rows, d}, dt, seed++, 1.0),
                     s = draw({1, 1, rows, d}, dt, seed++, 1.0);
        std::vector<Value> both[2];
        for (int i = 0; i < 2; ++i) {
          const Tensor& x = i == 0 ? q : k;
          both[i] = {Value::from_tensor(x),    Value::from_tensor(w), Value::floating(1e-6),
                     Value::boolean(in_float), Value::from_tensor(c), Value::from_tensor(s)};
          const Tensor want = run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[i]);
          const Tensor got = run_op_on(DeviceType::kCuda, "rms_norm_rotary", both[i]);
          EXPECT_TRUE(bytes_equal(got, want))
              << "rms_norm_rotary " << dtype_name(dt) << " x " << shape_str(x.shape())
              << (in_float ? " weight_in_float" : "");
        }
#ifdef INPLACE_WITH_CUDA
        // q and k in one launch, as the engine pairs a layer's two steps.
        const auto [got_q, got_k] = run_pair_on_cuda("rms_norm_rotary", both[0], both[1]);
        EXPECT_TRUE(bytes_equal(got_q, run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[0])))
            << "paired q " << dtype_name(dt) << " d " << d;
        EXPECT_TRUE(bytes_equal(got_k, run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[1])))
            << "paired k " << dtype_name(dt) << " d " << d;
#endif
      }
}

// Gemma's 1 + w from the model's own weight (weight_offset 1.0, the weight of the input's dtype
// or float32): the norm alone (and with a residual added), the norm and rotary, and a q/k pair in
// one launch with a weight of each form, bitwise the cpu kernels (which compute the add as the
// chain's own kernels do).
TEST(CudaUpcastRmsNorm, WeightOffsetBitwiseTheCpuKernel) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 4000;
  for (DType dt : {DType::kBFloat16, DType::kFloat16, DType::kFloat32})
    for (DType wt : {dt, DType::kFloat32})
      for (const Shape& s : {Shape{1, 1, 1024}, Shape{1, 1, 4, 256}, Shape{3, 1152}}) {
        const Tensor x = draw(s, dt, seed++, 8.0, true);
        const Tensor w = draw({s.back()}, wt, seed++, 0.5);
        const std::vector<Value> a{Value::from_tensor(x), Value::from_tensor(w),
                                   Value::floating(1e-6), Value::boolean(true),
                                   Value::floating(1.0)};
        EXPECT_TRUE(bytes_equal(run_op_on(DeviceType::kCuda, "upcast_rms_norm", a),
                                run_op_on(DeviceType::kCpu, "upcast_rms_norm", a)))
            << dtype_name(dt) << " weight " << dtype_name(wt) << " " << shape_str(s);
        // With the residual add after it (Gemma 3's norms after attention and the MLP).
        std::vector<Value> ar = a;
        ar.push_back(Value::from_tensor(draw(s, dt, seed++, 20.0)));
        EXPECT_TRUE(bytes_equal(run_op_on(DeviceType::kCuda, "upcast_rms_norm", ar),
                                run_op_on(DeviceType::kCpu, "upcast_rms_norm", ar)))
            << "residual " << dtype_name(dt) << " weight " << dtype_name(wt) << " " << shape_str(s);
      }
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t d : {64, 256}) {
      const Tensor qkv = draw({1, 1, 12 * d}, dt, seed++, 6.0);
      const Tensor q = qkv.slice(2, 0, 8 * d).view({1, 1, 8, d}).transpose(1, 2);
      const Tensor k = qkv.slice(2, 8 * d, 10 * d).view({1, 1, 2, d}).transpose(1, 2);
      const Tensor c = draw({1, 1, 1, d}, dt, seed++, 1.0),
                   sn = draw({1, 1, 1, d}, dt, seed++, 1.0);
      std::vector<Value> both[2];
      for (int i = 0; i < 2; ++i) {
        const Tensor w = draw({d}, i == 0 ? dt : DType::kFloat32, seed++, 0.5);
        both[i] = {Value::from_tensor(i == 0 ? q : k),
                   Value::from_tensor(w),
                   Value::floating(1e-6),
                   Value::boolean(true),
                   Value::from_tensor(c),
                   Value::from_tensor(sn),
                   Value::none(),
                   Value::integer(0),
                   Value::floating(1.0)};
        EXPECT_TRUE(bytes_equal(run_op_on(DeviceType::kCuda, "rms_norm_rotary", both[i]),
                                run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[i])))
            << "rms_norm_rotary " << dtype_name(dt) << " d " << d << " step " << i;
      }
#ifdef INPLACE_WITH_CUDA
      const auto [got_q, got_k] = run_pair_on_cuda("rms_norm_rotary", both[0], both[1]);
      EXPECT_TRUE(bytes_equal(got_q, run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[0])));
      EXPECT_TRUE(bytes_equal(got_k, run_op_on(DeviceType::kCpu, "rms_norm_rotary", both[1])));
#endif
    }
}

#ifdef INPLACE_WITH_CUDA
// A layer's q and k heads as one step (heads from `split` on take the second weight), then the
// k heads stored into a cache at a position from the step's own launch (the kv_cache_update after
// it, as the engine groups them): every element and the whole cache equal the cpu's steps.
TEST(CudaRmsNormRotary, QAndKHeadsInOneStepWithTheKCacheWrite) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3900;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t d : {64, 128})
      for (int64_t pos : {0, 5, 15}) {
        const int64_t heads = 8, kv = 2, slots = 16;
        const Tensor qkv = draw({1, 1, (heads + 2 * kv) * d}, dt, seed++, 6.0);
        const Tensor x = qkv.slice(2, 0, (heads + kv) * d).view({1, 1, heads + kv, d});
        const Tensor wq = draw({d}, dt, seed++, 2.0), wk = draw({d}, dt, seed++, 2.0);
        const Tensor c = draw({1, 1, 1, d}, dt, seed++, 1.0),
                     s = draw({1, 1, 1, d}, dt, seed++, 1.0);
        const std::vector<Value> a{Value::from_tensor(x),  Value::from_tensor(wq),
                                   Value::floating(1e-6),  Value::boolean(false),
                                   Value::from_tensor(c),  Value::from_tensor(s),
                                   Value::from_tensor(wk), Value::integer(heads)};
        const Tensor want = run_op_on(DeviceType::kCpu, "rms_norm_rotary", a);
        EXPECT_TRUE(bytes_equal(run_op_on(DeviceType::kCuda, "rms_norm_rotary", a), want))
            << "q and k heads " << dtype_name(dt) << " d " << d;
        // The cpu's k write.
        const Tensor cache = draw({1, kv, slots, d}, dt, seed++, 3.0);
        Tensor index = Tensor::zeros({1}, DType::kInt64);
        index.data<int64_t>()[0] = pos;
        const Tensor want_cache =
            run_op_on(DeviceType::kCpu, "kv_cache_update",
                      {Value::from_tensor(cache),
                       Value::from_tensor(want.slice(2, heads, heads + kv).transpose(1, 2)),
                       Value::none(), Value::from_tensor(index)});
        // The step with the write from its launch.
        ResolvedCall step = resolve_call("rms_norm_rotary", a, {}, "test");
        const std::vector<Value> gpu_args = to_cuda_args(step.args);
        std::vector<Tensor> out{Tensor::empty(want.shape(), dt, Device::cuda())};
        const Tensor cache_dev = to_cuda_view(cache);
        std::vector<Value> write_args{
            Value::from_tensor(cache_dev),
            Value::from_tensor(out[0].slice(2, heads, heads + kv).transpose(1, 2)), Value::none(),
            Value::from_tensor(to_cuda_view(index))};
        ResolvedCall write = resolve_call("kv_cache_update", write_args, {}, "test");
        std::vector<Tensor> write_out{cache_dev};
        const cuda::WritesKernel* k =
            cuda::LaunchKernels::get().find_epilogue_writes(*step.op, *write.op);
        ASSERT_NE(k, nullptr);
        const cuda::StepCall w{&write.args, &write_out, KernelContext{}};
        EXPECT_TRUE((*k)({&gpu_args, &out, KernelContext{}}, &w, 1));
        EXPECT_TRUE(bytes_equal(out[0].to_device(Device::cpu()), want))
            << "with the write " << dtype_name(dt) << " d " << d;
        EXPECT_TRUE(bytes_equal(cache_dev.to_device(Device::cpu()), want_cache))
            << "the k cache " << dtype_name(dt) << " d " << d << " position " << pos;
      }
}
#endif

}  // namespace
