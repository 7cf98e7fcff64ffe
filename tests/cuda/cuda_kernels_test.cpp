// Every CUDA kernel against the cpu kernel of the same op, in the manner of ggml's backend-ops
// test: random shapes, dtypes and layouts (contiguous, transposed, strided, broadcast), the
// same arguments on both devices, a tolerance per dtype. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include "kernels/cuda/call_data.h"

#include <functional>

#include "backend/eager_call.h"
#include "cuda_test_util.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const DType kFloats[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
const Layout kLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kStrided};

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}
Value I(int64_t v) {
  return Value::integer(v);
}
Value F(double v) {
  return Value::floating(v);
}
Value Ints(std::vector<int64_t> v) {
  return Value::int_list(v);
}

// Values in [0.5, 2.5]: divisors, logarithms, square roots.
Tensor positive(const Shape& shape, DType dt, uint32_t seed) {
  Tensor t = random_tensor(shape, DType::kFloat64, seed, true);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = 0.5 + t.data<double>()[i];
  return t.to(dt);
}

// Runs `target` on the cpu and on cuda with the same arguments; compares every result.
void check(const std::string& target, const std::vector<Value>& args,
           const std::vector<std::pair<std::string, Value>>& kwargs = {}, double tol = -1) {
  ResolvedCall call = resolve_call(target, args, kwargs, "test");
  const OpDef& op = *call.op;
  SCOPED_TRACE(op.schema.full_name());
  const Kernel* kernel = KernelTable::get().find(op, DeviceType::kCuda);
  ASSERT_NE(kernel, nullptr) << "no cuda kernel for " << op.schema.full_name();
  std::vector<Tensor> want, got;
  if (op.infer) {
    for (const Tensor& m : op.infer(call.args)) want.push_back(Tensor::empty(m.shape(), m.dtype()));
    (*KernelTable::get().find(op, DeviceType::kCpu))(call.args, want, KernelContext{});
  } else {  // an op the cpu runs eagerly (casts, reshape's copy)
    want.push_back(eager_call(op, call.args).tensor.clone());
  }
  for (const Tensor& w : want) got.push_back(Tensor::empty(w.shape(), w.dtype(), Device::cuda()));
  const std::vector<Value> gpu_args = to_cuda_args(call.args);
  (*kernel)(gpu_args, got, KernelContext{});
  for (size_t j = 0; j < want.size(); ++j) {
    const double t = tol >= 0 ? tol : dtype_tolerance(want[j].dtype());
    EXPECT_TRUE(close(got[j].to_device(Device::cpu()), want[j], t)) << "result " << j;
  }
}

TEST(CudaKernels, BinaryArithmeticBroadcastAndStrides) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 1;
  for (DType dt : kFloats)
    for (Layout l : kLayouts) {
      const Tensor a = random_view({3, 5, 6}, dt, seed++, l);
      const Tensor row = random_tensor({6}, dt, seed++);
      const Tensor col = random_view({5, 1}, dt, seed++, l);
      for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
        check(op, {T(a), T(row)});
        check(op, {T(col), T(a)});
      }
      check("add", {T(a), T(row)}, {{"alpha", Value::floating(0.5)}});
      check("div", {T(a), T(positive({6}, dt, seed++))});
      check("mul", {T(a), Value::floating(1.5)});
      check("sub", {T(a), Value::integer(3)});
    }
  for (Layout l : kLayouts) {
    const Tensor a = random_view({4, 7}, DType::kInt64, seed++, l);
    const Tensor b = random_view({4, 7}, DType::kInt32, seed++, l);
    for (const char* op : {"add", "sub", "mul", "maximum"}) check(op, {T(a), T(b)});
    check("mul", {T(a), Value::floating(0.5)});  // promotes to float
  }
}

TEST(CudaKernels, UnaryMath) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 100;
  for (DType dt : kFloats)
    for (Layout l : kLayouts) {
      const Tensor x = random_view({5, 9}, dt, seed++, l);
      const Tensor p = positive({5, 9}, dt, seed++);
      for (const char* op : {"neg", "abs", "relu", "exp", "sin", "cos", "tanh", "sigmoid", "silu",
                             "erf", "floor", "ceil", "round", "trunc"})
        check(op, {T(x)});
      for (const char* op : {"sqrt", "rsqrt", "log", "reciprocal"}) check(op, {T(p)});
      check("gelu", {T(x)});
      check("gelu", {T(x)}, {{"approximate", Value::string("tanh")}});
      check("pow", {T(x), I(2)});
      check("pow", {T(p), F(0.5)});
    }
  const Tensor i = random_view({6, 4}, DType::kInt64, seed++, Layout::kTransposed);
  for (const char* op : {"neg", "abs", "exp", "bitwise_not", "logical_not"}) check(op, {T(i)});
  check("logical_not", {T(random_tensor({7}, DType::kBool, seed++))});
}

TEST(CudaKernels, ComparisonsWhereAndMaskedFill) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 200;
  for (DType dt : kFloats)
    for (Layout l : kLayouts) {
      const Tensor a = random_view({4, 6}, dt, seed++, l);
      const Tensor b = random_tensor({6}, dt, seed++);
      for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"})
        check(op, {T(a), T(b)});
      check("lt", {T(a), F(0.25)});
      const Tensor cond = random_view({4, 6}, DType::kBool, seed++, l);
      check("where", {T(cond), T(a), T(b)});
      check("where", {T(cond), T(a), F(-1.0)});
      check("masked_fill", {T(a), T(random_tensor({6}, DType::kBool, seed++)), F(-1e4)});
      check("clamp", {T(a), F(-0.5), F(0.75)});
      check("clamp", {T(a), Value::none(), F(0.75)});
      check("clamp", {T(a), T(b), T(random_tensor({4, 1}, dt, seed++))});
      check("clamp_min", {T(a), F(0.0)});
    }
}

TEST(CudaKernels, CopiesCastsAndFills) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 300;
  const DType all[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                       DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kBool};
  for (DType from : all)
    for (Layout l : kLayouts) {
      const Tensor x = random_view({3, 4, 5}, from, seed++, l);
      check("clone", {T(x)});
      for (DType to : all) check("_to_copy", {T(x)}, {{"dtype", Value::dtype_value(to)}});
      check("copy", {T(random_tensor({3, 4, 5}, DType::kFloat32, seed++)), T(x)});
      check("fill", {T(x), F(2.5)});
      check("zeros_like", {T(x)});
      check("full_like", {T(x), I(7)});
      const Tensor y = random_view({3, 2, 5}, from, seed++, l);
      check("cat", {Value::list({T(x), T(y), T(x)}), I(1)});
      check("cat", {Value::list({T(x), T(random_tensor({0}, from, seed++))}), I(0)});
      check("stack", {Value::list({T(x), T(x.clone())}), I(-1)});
    }
  // cat's copies in one launch where they convert through one type, else one launch each: an
  // int64 and a float32 input into a float32 result (int64 -> float32 rounds once, the float
  // through double), and more inputs than one launch takes (kMaxCopyBatch).
  check("cat", {Value::list({T(random_tensor({2, 3}, DType::kInt64, seed++)),
                             T(random_tensor({2, 3}, DType::kFloat32, seed++))}),
                I(0)});
  std::vector<Value> many;
  for (int i = 0; i < 19; ++i)
    many.push_back(T(random_view({2, 1 + i % 3, 4}, DType::kBFloat16, seed++, kLayouts[i % 3])));
  check("cat", {Value::list(many), I(1)});
  check("full", {Ints({2, 3}), F(1.25)});
  check("zeros", {Ints({4, 5})});
  check("ones", {Ints({4})}, {{"dtype", Value::dtype_value(DType::kBFloat16)}});
  check("arange", {I(17)});
  check("arange", {I(3), I(40), I(4)});
  check("arange", {F(0.5), F(9.0), F(0.25)});
}

TEST(CudaKernels, ReductionsSoftmaxAndNorms) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 400;
  for (DType dt : kFloats) {
    // Long rows accumulate more rounding in 16-bit results.
    const double tol = dt == DType::kFloat32 ? 1e-4 : dtype_tolerance(dt) * 2;
    for (Layout l : kLayouts) {
      const Tensor x = random_view({3, 5, 300}, dt, seed++, l);
      for (int64_t dim : {-1, 0, 1}) {
        check("sum", {T(x), Ints({dim})}, {}, tol);
        check("mean", {T(x), Ints({dim}), Value::boolean(true)}, {}, tol);
        check("amax", {T(x), Ints({dim})});
        check("amin", {T(x), Ints({dim}), Value::boolean(true)});
        check("argmax", {T(x), I(dim)});
        check("argmin", {T(x), I(dim), Value::boolean(true)});
        check("softmax", {T(x), I(dim)}, {}, tol);
        check("log_softmax", {T(x), I(dim)}, {}, tol);
      }
      check("sum", {T(x), Ints({0, 2})}, {}, tol);
      check("argmax", {T(x)});
      check("sum", {T(x)}, {}, tol * 10);
      const Tensor w = random_tensor({300}, dt, seed++), b = random_tensor({300}, dt, seed++);
      check("rms_norm", {T(x), Ints({300}), T(w), F(1e-6)}, {}, tol);
      check("rms_norm", {T(x), Ints({300})}, {}, tol);
      check("layer_norm", {T(x), Ints({300}), T(w), T(b)}, {}, tol);
      check("layer_norm", {T(x), Ints({300}), T(w)}, {}, tol);  // a weight, no bias
      check("layer_norm", {T(x), Ints({5, 300})}, {}, tol);
    }
  }
  check("sum", {T(random_tensor({6, 7}, DType::kInt64, seed++)), Ints({1})});
}

TEST(CudaKernels, MatrixProductsThroughCublas) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 500;
  for (DType dt : kFloats) {
    const double tol = dt == DType::kFloat32 ? 1e-4 : dtype_tolerance(dt) * 2;
    for (Layout la : kLayouts)
      for (Layout lb : kLayouts) {
        const Tensor a = random_view({7, 33}, dt, seed++, la);
        const Tensor b = random_view({33, 12}, dt, seed++, lb);
        check("mm", {T(a), T(b)}, {}, tol);
        check("matmul", {T(a), T(b)}, {}, tol);
        const Tensor ba = random_view({3, 7, 33}, dt, seed++, la);
        const Tensor bb = random_view({3, 33, 12}, dt, seed++, lb);
        check("bmm", {T(ba), T(bb)}, {}, tol);
        check("matmul", {T(ba), T(b)}, {}, tol);  // broadcast batch
        check("matmul",
              {T(random_view({2, 1, 7, 33}, dt, seed++, la)),
               T(random_view({4, 33, 12}, dt, seed++, lb))},
              {}, tol);
        check("baddbmm", {T(random_tensor({12}, dt, seed++)), T(ba), T(bb)},
              {{"beta", F(0.5)}, {"alpha", F(2.0)}}, tol);
      }
    const Tensor x = random_tensor({2, 5, 64}, dt, seed++);
    const Tensor w = random_tensor({48, 64}, dt, seed++);
    check("linear", {T(x), T(w)}, {}, tol);
    check("linear", {T(x), T(w), T(random_tensor({48}, dt, seed++))}, {}, tol);
    check("linear", {T(random_tensor({64}, dt, seed++)), T(w)}, {}, tol);  // decode GEMV
    check("addmm",
          {T(random_tensor({48}, dt, seed++)), T(random_tensor({3, 64}, dt, seed++)), T(w.t())}, {},
          tol);
    check("matmul", {T(random_tensor({64}, dt, seed++)), T(random_tensor({64}, dt, seed++))}, {},
          tol);
  }
}

TEST(CudaKernels, IndexedReadsAndWrites) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 600;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kInt64})
    for (Layout l : kLayouts) {
      const Tensor table = random_view({50, 16}, dt, seed++, l);
      const Tensor ids = Tensor::from_vector<int64_t>({3, 0, 49, 7, 7, 12}, {2, 3});
      check("embedding", {T(table), T(ids)});
      if (dt == DType::kBFloat16) check("inplace.fused_embedding", {T(ids), T(table)});
      check("index_select", {T(table), I(0), T(ids.flatten())});
      check("index_select", {T(table), I(1), T(Tensor::from_vector<int64_t>({15, 0, 2}, {3}))});
      const Tensor src = random_view({3, 5, 8}, dt, seed++, l);
      const Tensor gidx = Tensor::from_vector<int64_t>(
          std::vector<int64_t>{0, 2, 1, 0, 2, 1, 1, 0, 2, 2, 0, 1, 1, 1, 0}, {3, 5, 1});
      check("gather", {T(src), I(2), T(gidx)});
      const Tensor self = random_view({6, 4, 8}, dt, seed++, l);
      check("index_copy", {T(self), I(0), T(Tensor::from_vector<int64_t>({5, 1}, {2})),
                           T(random_tensor({2, 4, 8}, dt, seed++))});
      check("index_copy", {T(self), I(2), T(Tensor::from_vector<int32_t>({7, 0, 3}, {3})),
                           T(random_tensor({6, 4, 3}, dt, seed++))});
      check("slice_scatter", {T(self), T(random_tensor({6, 2, 8}, dt, seed++)), I(1), I(1), I(3)});
      check("slice_scatter",
            {T(self), T(random_tensor({6, 4, 4}, dt, seed++)), I(2), I(0), I(8), I(2)});
      check("select_scatter", {T(self), T(random_tensor({6, 8}, dt, seed++)), I(1), I(-1)});
      const Value none = Value::none(), no = Value::boolean(false);
      check("index_put",
            {T(self), Value::list({none, T(Tensor::from_vector<int64_t>({2, -1}, {2}))}),
             T(random_tensor({2, 8}, dt, seed++)), no});
      check("index_put", {T(self), Value::list({T(Tensor::scalar(int64_t{4}, DType::kInt64))}),
                          T(random_tensor({8}, dt, seed++)), no});
      check("reshape", {T(self.transpose(0, 2)), Ints({-1, 6})});
      check("index",
            {T(self), Value::list({none, none, T(Tensor::from_vector<int64_t>({7, -8, 2}, {3}))})});
      check("index", {T(self), Value::list({T(Tensor::scalar(int64_t{-2}, DType::kInt64))})});
      check("contiguous", {T(self.transpose(1, 2))});
      check("to", {T(self)}, {{"dtype", Value::dtype_value(DType::kFloat64)}});
    }
}

TEST(CudaKernels, KvCacheUpdateReadsPositionsOnTheDevice) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 700;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    const Tensor cache = random_tensor({2, 3, 40, 8}, dt, seed++);
    const Tensor one = random_tensor({2, 3, 1, 8}, dt, seed++);
    const Tensor four = random_tensor({2, 3, 4, 8}, dt, seed++);
    for (int64_t pos : {0, 17, 39})
      check("kv_cache_update", {T(cache), T(one), T(Tensor::scalar(pos, DType::kInt64))});
    check("kv_cache_update", {T(cache), T(four), T(Tensor::from_vector<int64_t>({3, 30}, {2}))});
    check("kv_cache_update",
          {T(cache), T(four), Value::none(), T(Tensor::from_vector<int64_t>({9, 1, 33, 2}, {4}))});
    check("kv_cache_update",
          {T(cache), T(four), Value::none(),
           T(Tensor::from_vector<int32_t>({0, 1, 2, 3, 36, 37, 38, 39}, {2, 4}))});
  }
}

TEST(CudaKernels, AttentionDecodeAndPrefill) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 800;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int64_t S : {1, 37, 700, 5000}) {
      const double tol = dt == DType::kFloat32 ? 1e-4 : dtype_tolerance(dt) * 2;
      const Tensor q = random_tensor({2, 8, 1, 64}, dt, seed++);
      const Tensor k = random_tensor({2, 2, S, 64}, dt, seed++);
      const Tensor v = random_tensor({2, 2, S, 64}, dt, seed++);
      check("scaled_dot_product_attention", {T(q), T(k), T(v)},
            {{"enable_gqa", Value::boolean(true)}}, tol);
      // A cache view: the filled prefix of a longer cache (strided over s_max).
      const Tensor kc = random_tensor({2, 8, S + 9, 64}, dt, seed++).slice(2, 0, S);
      const Tensor vc = random_tensor({2, 8, S + 9, 64}, dt, seed++).slice(2, 0, S);
      check("scaled_dot_product_attention", {T(q), T(kc), T(vc)}, {}, tol);
      const Tensor mask = random_tensor({1, 1, 1, S}, DType::kBool, seed++);
      check("scaled_dot_product_attention", {T(q), T(kc), T(vc), T(mask)}, {}, tol);
      check("scaled_dot_product_attention",
            {T(q), T(kc), T(vc), T(random_tensor({1, S}, dt, seed++))}, {{"scale", F(0.3)}}, tol);
    }
  const Tensor q = random_tensor({1, 4, 9, 32}, DType::kFloat32, seed++);
  const Tensor k = random_tensor({1, 4, 9, 32}, DType::kFloat32, seed++);
  check("scaled_dot_product_attention", {T(q), T(k), T(k)}, {{"is_causal", Value::boolean(true)}});
}

// The decode fast path at float32, bfloat16 and float16 (head dims whose quarter is a power of
// two; the split count follows the keys, the cluster merging) and the generic kernel it leaves
// (odd head dims).
TEST(CudaKernels, AttentionDecodeFastPathHeadDimsAndSplits) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 850;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int64_t E : {4, 16, 32, 64, 128, 40})
      for (int64_t S : {1, 31, 33, 200, 4096, 9000}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " E " + std::to_string(E) + " S " +
                     std::to_string(S));
        const double tol = dt == DType::kFloat32 ? 1e-4 : dtype_tolerance(dt) * 2;
        const Tensor q = random_tensor({1, 16, 1, E}, dt, seed++);
        const Tensor k = random_tensor({1, 4, S + 3, E}, dt, seed++).slice(2, 0, S);
        const Tensor v = random_tensor({1, 4, S + 3, E}, dt, seed++).slice(2, 0, S);
        check("scaled_dot_product_attention", {T(q), T(k), T(v)},
              {{"enable_gqa", Value::boolean(true)}}, tol);
        check("scaled_dot_product_attention", {T(q), T(k), T(v)},
              {{"enable_gqa", Value::boolean(true)}, {"scale", F(0.7)}}, tol);
        // A sliding window over the keys: the last 1, 37 or 512 of them.
        for (int64_t w : {1, 37, 512})
          check("scaled_dot_product_attention", {T(q), T(k), T(v)},
                {{"enable_gqa", Value::boolean(true)}, {"window", I(w)}}, tol);
      }
}

// The decode fast path with its key count in device memory (a decode step's runtime scalar),
// written by the kernel just before: the attention kernel, a programmatic dependent of that
// kernel, sizes its L2 prefetch from the count as it reads before its wait, and must take its
// keys from the count after it. Over a sequence of counts, each against the cpu on the filled
// prefix.
TEST(CudaKernels, AttentionKeyCountWrittenByTheKernelBefore) {
  IP_REQUIRE_CUDA();
  const int64_t s_max = 700;
  const Tensor q = random_tensor({1, 16, 1, 64}, DType::kFloat32, 870);
  const Tensor k = random_tensor({1, 4, s_max, 64}, DType::kFloat32, 871);
  const Tensor v = random_tensor({1, 4, s_max, 64}, DType::kFloat32, 872);
  const Tensor zero = Tensor::zeros({1}, DType::kInt64);
  const Tensor len = Tensor::empty({1}, DType::kInt64, Device::cuda());
  const Value gqa = Value::boolean(true);
  ResolvedCall add = resolve_call("add", {T(to_cuda_view(zero)), I(0)}, {}, "test");
  const Kernel* add_kernel = KernelTable::get().find(*add.op, DeviceType::kCuda);
  ResolvedCall sdpa = resolve_call("scaled_dot_product_attention",
                                   {T(to_cuda_view(q)), T(to_cuda_view(k)), T(to_cuda_view(v))},
                                   {{"enable_gqa", gqa}}, "test");
  const Kernel* sdpa_kernel = KernelTable::get().find(*sdpa.op, DeviceType::kCuda);
  ASSERT_NE(add_kernel, nullptr);
  ASSERT_NE(sdpa_kernel, nullptr);
  const Tensor out = Tensor::empty({1, 16, 1, 64}, DType::kFloat32, Device::cuda());
  cuda::CallData data;  // what the cuda executable lends a step: here only its key count
  data.key_count = static_cast<const int64_t*>(len.data_ptr());
  KernelContext ctx;
  ctx.backend = &data;
  for (int64_t n : {200, 201, 64, 65, 1, 700, 3, 129, 128, 450}) {
    SCOPED_TRACE("keys " + std::to_string(n));
    add.args[1] = I(n);
    (*add_kernel)(add.args, {len}, KernelContext{});  // len = n, by a kernel
    (*sdpa_kernel)(sdpa.args, {out}, ctx);
    ResolvedCall want_call = resolve_call("scaled_dot_product_attention",
                                          {T(q), T(k.slice(2, 0, n)), T(v.slice(2, 0, n))},
                                          {{"enable_gqa", gqa}}, "test");
    const Tensor want = Tensor::empty({1, 16, 1, 64}, DType::kFloat32);
    (*KernelTable::get().find(*want_call.op, DeviceType::kCpu))(want_call.args, {want}, {});
    EXPECT_TRUE(close(out.to_device(Device::cpu()), want, 1e-4));
    // With a window of 100 keys: the last 100 of the n the count says.
    ResolvedCall windowed = sdpa;
    windowed.args[8] = I(100);
    (*sdpa_kernel)(windowed.args, {out}, ctx);
    const int64_t lo = n > 100 ? n - 100 : 0;
    ResolvedCall want_w = resolve_call("scaled_dot_product_attention",
                                       {T(q), T(k.slice(2, lo, n)), T(v.slice(2, lo, n))},
                                       {{"enable_gqa", gqa}}, "test");
    (*KernelTable::get().find(*want_w.op, DeviceType::kCpu))(want_w.args, {want}, {});
    EXPECT_TRUE(close(out.to_device(Device::cpu()), want, 1e-4)) << "window 100";
  }
}

// fused_linear and its fused epilogues (fuse_linear_epilogues) against the cpu: one to
// six rows, odd and vector-friendly k (one row: one to eight warps a column, one pass or more
// over a weight row), bias or none.
TEST(CudaKernels, FusedLinearAndItsEpilogues) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 900;
  for (int64_t rows : {1, 2, 4, 6})
    for (int64_t k : {64, 1024, 1032, 2816, 8200, 37}) {
      // k 8200 (more than one pass of eight warps over a row) at one row only: the cpu and the
      // several-row kernel differ there by more than the tolerance in float32 accumulation.
      if (k == 8200 && rows > 1) continue;
      SCOPED_TRACE("rows " + std::to_string(rows) + " k " + std::to_string(k));
      const int64_t n = 72;
      const Tensor x = random_tensor({1, rows, k}, DType::kFloat32, seed++);
      const Tensor w = random_tensor({n, k}, DType::kBFloat16, seed++);
      const Tensor w2 = random_tensor({n, k}, DType::kBFloat16, seed++);
      const Tensor b = random_tensor({n}, DType::kFloat32, seed++);
      const Tensor r = random_tensor({1, rows, n}, DType::kFloat32, seed++);
      check("inplace.fused_linear", {T(x), T(w), T(b)}, {}, 1e-4);
      check("inplace.fused_linear", {T(x), T(w), Value::none()}, {}, 1e-4);
      check("inplace.fused_linear", {T(x), T(w), Value::none(), T(r)}, {}, 1e-4);
      check("inplace.fused_linear", {T(x), T(w), T(b), T(r)}, {}, 1e-4);
      check("inplace.gated_mlp", {T(x), T(w), T(w2)}, {}, 1e-4);
      // With the RMSNorm prologue (fuse_norm_prologues); k = 37 takes the scalar path. The
      // products above are exact in any order (x and w are multiples of 1/64); normalised rows
      // are not, and silu(g) * u multiplies two sums of k rounded terms (|g|, |u| ~ 50): its
      // rounding differs from the cpu's order by up to ~2e-4 of the result's scale.
      const Tensor nw = random_tensor({k}, DType::kFloat32, seed++);
      const Value eps = Value::floating(1e-5);
      check("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), T(b)}, {}, 1e-4);
      check("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), Value::none()}, {}, 1e-4);
      check("inplace.rms_norm_gated_mlp", {T(x), T(nw), eps, T(w), T(w2)}, {}, 1e-3);
      // The rotary epilogue (fuse_rotary_epilogues): heads of 8 over all 72 columns, heads of 24
      // over the first 48.
      for (int64_t d : {8, 24}) {
        const Tensor cos = random_tensor({1, 1, 1, d}, DType::kFloat32, seed++);
        const Tensor sin = random_tensor({1, 1, 1, d}, DType::kFloat32, seed++);
        const int64_t cols = d == 8 ? n : 2 * d;
        check("inplace.rms_norm_linear",
              {T(x), T(nw), eps, T(w), T(b), T(cos), T(sin), Value::integer(cols)}, {}, 1e-4);
      }
      // x a view whose rows are strided (a slice of a wider tensor).
      const Tensor wide = random_tensor({1, rows, k + 8}, DType::kFloat32, seed++);
      check("inplace.rms_norm_linear", {T(wide.slice(2, 0, k)), T(nw), eps, T(w), Value::none()},
            {}, 1e-4);
    }
}

// One-row products with more columns than the GPU holds blocks of (an LM head): one wave of
// blocks whose warps walk the columns (GemvBf16::col_stride), every epilogue, against the cpu.
TEST(CudaKernels, FusedLinearWiderThanAWave) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 950;
  const int64_t n = 40001, k = 64;  // past 132 SMs x 4 blocks x 8 columns; an odd last block
  const Tensor x = random_tensor({1, 1, k}, DType::kFloat32, seed++);
  const Tensor w = random_tensor({n, k}, DType::kBFloat16, seed++);
  const Tensor w2 = random_tensor({n, k}, DType::kBFloat16, seed++);
  const Tensor b = random_tensor({n}, DType::kFloat32, seed++);
  const Tensor r = random_tensor({1, 1, n}, DType::kFloat32, seed++);
  const Tensor nw = random_tensor({k}, DType::kFloat32, seed++);
  const Value eps = Value::floating(1e-5);
  check("inplace.fused_linear", {T(x), T(w), T(b)}, {}, 1e-4);
  check("inplace.fused_linear", {T(x), T(w), Value::none(), T(r)}, {}, 1e-4);
  check("inplace.gated_mlp", {T(x), T(w), T(w2)}, {}, 1e-4);
  check("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), Value::none()}, {}, 1e-4);
  check("inplace.rms_norm_gated_mlp", {T(x), T(nw), eps, T(w), T(w2)}, {}, 1e-3);
}

// One-row products at a half dtype with more column blocks than the GPU holds at once (the
// one-row kernel stays resident and takes the blocks in turn, fetching the next column's weights
// before it sums the current one): rows fetched whole (k 64, 1024), split over 4 and 8 warps
// (2816, 8192), fetched in passes (16384), the rotary epilogue over blocks of every turn.
TEST(CudaKernels, HalfFusedLinearWiderThanAWave) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 1900;
  for (int64_t k : {64, 1024, 2816, 8192, 16384}) {
    const int64_t n = k >= 8192 ? 3001 : 9001;  // past 132 SMs x 2 blocks x 8 columns; odd
    SCOPED_TRACE(str_cat("k ", k, " n ", n));
    const DType dt = DType::kBFloat16;
    const double tol = 4e-2;
    const Tensor x = random_tensor({1, 1, k}, dt, seed++);
    const Tensor w = random_tensor({n, k}, dt, seed++);
    const Tensor w2 = random_tensor({n, k}, dt, seed++);
    const Tensor b = random_tensor({n}, dt, seed++);
    const Tensor r = random_tensor({1, 1, n}, dt, seed++);
    const Tensor nw = random_tensor({k}, dt, seed++);
    const Value eps = Value::floating(1e-6), none = Value::none(), form = Value::string("upcast");
    check("inplace.fused_linear", {T(x), T(w), T(b)}, {}, tol);
    check("inplace.fused_linear", {T(x), T(w), none, T(r)}, {}, tol);
    check("inplace.rms_norm_gated_mlp",
          {T(x), T(nw), eps, T(w), T(w2), Value::string("silu"), form}, {}, 2 * tol);
    const int64_t d = 64;
    const Tensor cos = random_tensor({1, 1, 1, d}, dt, seed++);
    const Tensor sin = random_tensor({1, 1, 1, d}, dt, seed++);
    check("inplace.rms_norm_linear",
          {T(x), T(nw), eps, T(w), T(b), T(cos), T(sin), Value::integer(n - n % d), form}, {},
          2 * tol);
  }
}

// The fused linear family at a half dtype (a model exported in bf16 or fp16: gemv_half.h)
// against the cpu's kernels (the chain's own): every epilogue (the rotary too), every upcast
// norm. The GPU sums in another order, which may move a rounded result by one unit in its last
// place (and silu(g) * u, or a rotated pair, by a few): tolerances of a few of the dtype's units.
TEST(CudaKernels, FusedLinearAtHalfDtypes) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 1200;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t rows : {1, 2, 4})
      for (int64_t k : {64, 1024, 2816, 8192, 37}) {
        // At one row, k 2816 and 8192 take 4 and 8 warps a column (the one-row kernel's split).
        const int64_t n = 72;
        SCOPED_TRACE(str_cat(dtype_name(dt), " rows ", rows, " k ", k, " n ", n));
        const double tol = dt == DType::kBFloat16 ? 4e-2 : 1e-2;
        const Tensor x = random_tensor({1, rows, k}, dt, seed++);
        const Tensor w = random_tensor({n, k}, dt, seed++);
        const Tensor w2 = random_tensor({n, k}, dt, seed++);
        const Tensor b = random_tensor({n}, dt, seed++);
        const Tensor r = random_tensor({1, rows, n}, dt, seed++);
        const Tensor nw = random_tensor({k}, dt, seed++);
        const Tensor nw_float = random_tensor({k}, DType::kFloat32, seed++);
        const Value eps = Value::floating(1e-6);
        check("inplace.fused_linear", {T(x), T(w), T(b)}, {}, tol);
        check("inplace.fused_linear", {T(x), T(w), Value::none(), T(r)}, {}, tol);
        check("inplace.fused_linear", {T(x), T(w), T(b), T(r)}, {}, tol);
        check("inplace.gated_mlp", {T(x), T(w), T(w2)}, {}, 2 * tol);
        // Gemma's own weight (1 + w in the kernel) of the input's dtype and of float32.
        const std::pair<const char*, const Tensor*> norms[] = {
            {"upcast", &nw},
            {"upcast_float_weight", &nw_float},
            {"upcast_one_plus_weight", &nw},
            {"upcast_one_plus_weight", &nw_float}};
        for (const auto& [norm, weight] : norms) {
          SCOPED_TRACE(str_cat("norm ", norm, " weight ", dtype_name(weight->dtype())));
          const Tensor& g = *weight;
          const Value none = Value::none(), zero = Value::integer(0), form = Value::string(norm);
          check("inplace.rms_norm_linear", {T(x), T(g), eps, T(w), T(b), none, none, zero, form},
                {}, tol);
          check("inplace.rms_norm_gated_mlp",
                {T(x), T(g), eps, T(w), T(w2), Value::string("silu"), form}, {}, 2 * tol);
          // The rotary epilogue at the half dtype: heads of 8 over all 72 columns, heads of 24
          // over the first 48.
          for (int64_t d : {8, 24}) {
            const Tensor cos = random_tensor({1, 1, 1, d}, dt, seed++);
            const Tensor sin = random_tensor({1, 1, 1, d}, dt, seed++);
            const Value cols = Value::integer(d == 8 ? n : 2 * d);
            check("inplace.rms_norm_linear",
                  {T(x), T(g), eps, T(w), T(b), T(cos), T(sin), cols, form}, {}, 2 * tol);
          }
        }
      }
}

}  // namespace
