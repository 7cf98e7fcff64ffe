// A grouped product on the GPU (fused_linear's and rms_norm_linear's more_weights: the GEMV picks
// each column's weight from the row range it falls in) is bitwise the product with its weights
// stacked, on the same GPU: gemv_bf16 (float32 input) with its norm prologue and rotary epilogue,
// gemv_half (bf16 and fp16 input) with its upcast norms; q/k/v shapes (1024, 256, 256 rows) and
// odd ones (40, 8, 8; four weights of 37, 5, 11, 3), one to four rows, the 16-byte and the scalar
// path (k = 37, or a weight not 16-byte aligned). And within tolerance of the cpu. With a bias
// per weight (more_biases: Qwen2's q, k and v), bitwise the separate products on the same GPU
// (each column adds its own weight's bias), and within tolerance of the cpu. Skipped, saying so,
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "backend/kernel_table.h"
#include "cuda_test_util.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}

// `target` on cuda (its arguments uploaded with the same views); its result back on the cpu.
Tensor on_cuda(const std::string& target, const std::vector<Value>& args) {
  ResolvedCall call = resolve_call(target, args, {}, "test");
  const Kernel* kernel = KernelTable::get().find(*call.op, DeviceType::kCuda);
  EXPECT_NE(kernel, nullptr);
  const Tensor meta = call.op->infer(call.args)[0];
  std::vector<Tensor> got{Tensor::empty(meta.shape(), meta.dtype(), Device::cuda())};
  const std::vector<Value> gpu_args = to_cuda_args(call.args);
  (*kernel)(gpu_args, got, KernelContext{});
  return got[0].to_device(Device::cpu());
}

// `target` on the cpu.
Tensor on_cpu(const std::string& target, const std::vector<Value>& args) {
  ResolvedCall call = resolve_call(target, args, {}, "test");
  const Tensor meta = call.op->infer(call.args)[0];
  std::vector<Tensor> want{Tensor::empty(meta.shape(), meta.dtype())};
  (*KernelTable::get().find(*call.op, DeviceType::kCpu))(call.args, want, KernelContext{});
  return want[0];
}

Tensor stacked(const std::vector<Tensor>& ws) {
  int64_t rows = 0;
  for (const Tensor& w : ws) rows += w.size(0);
  Shape shape = ws[0].shape();
  shape[0] = rows;  // weights [n, k] or biases [n]
  Tensor s = Tensor::empty(shape, ws[0].dtype());
  int64_t at = 0;
  for (const Tensor& w : ws) {
    s.slice(0, at, at + w.size(0)).copy_from(w);
    at += w.size(0);
  }
  return s;
}

Value more_of(const std::vector<Tensor>& ws) {
  std::vector<Value> items;
  for (size_t i = 1; i < ws.size(); ++i) items.push_back(T(ws[i]));
  return Value::list(items);
}

// A contiguous [n, k] weight whose data starts one element past a 16-byte boundary.
Tensor misaligned(const Tensor& w) {
  Tensor base = Tensor::empty({w.numel() + 1}, w.dtype());
  Tensor v = base.slice(0, 1, std::nullopt).view(w.shape());
  v.copy_from(w);
  return v;
}

bool bitwise(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(),
                     a.numel() * dtype_size(a.dtype())) == 0;
}

// Runs the grouped and the stacked form of a product (`head` the arguments before the weight,
// `mid` those between the weight and more_weights) on cuda: equal bit for bit, and near the cpu.
// Where a weight is misaligned (the GEMV's scalar path) so is the stacked one (the same path).
void check_grouped(const std::string& target, const std::vector<Value>& head,
                   const std::vector<Tensor>& ws, const std::vector<Value>& mid, double tol,
                   bool aligned = true) {
  std::vector<Value> one = head, grouped = head;
  one.push_back(T(aligned ? stacked(ws) : misaligned(stacked(ws))));
  grouped.push_back(T(ws[0]));
  one.insert(one.end(), mid.begin(), mid.end());
  grouped.insert(grouped.end(), mid.begin(), mid.end());
  grouped.push_back(more_of(ws));
  const Tensor got = on_cuda(target, grouped), want = on_cuda(target, one);
  EXPECT_TRUE(bitwise(got, want)) << target << ": grouped and stacked differ";
  EXPECT_TRUE(close(got, on_cpu(target, grouped), tol)) << target << ": against the cpu";
}

const std::vector<std::vector<int64_t>> kWeightRows = {
    {1024, 256, 256}, {40, 8, 8}, {37, 5, 11, 3}};

TEST(CudaGroupedProduct, GemvBf16IsTheStackedProductBitwise) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3100;
  const Value none = Value::none(), eps = Value::floating(1e-5);
  for (const auto& rows_of : kWeightRows)
    for (int64_t k : {64, 1024, 37})
      for (int64_t rows : {1, 2, 4})
        for (bool aligned : {true, false}) {
          SCOPED_TRACE(str_cat("weights ", rows_of.size(), " (", rows_of[0], ") k ", k, " rows ",
                               rows, aligned ? "" : " misaligned"));
          std::vector<Tensor> ws;
          for (int64_t n : rows_of) ws.push_back(random_tensor({n, k}, DType::kBFloat16, seed++));
          if (!aligned) ws[1] = misaligned(ws[1]);
          int64_t n = 0;
          for (int64_t r : rows_of) n += r;
          const Tensor x = random_tensor({1, rows, k}, DType::kFloat32, seed++);
          const Tensor b = random_tensor({n}, DType::kFloat32, seed++);
          const Tensor r = random_tensor({1, rows, n}, DType::kFloat32, seed++);
          const Tensor nw = random_tensor({k}, DType::kFloat32, seed++);
          check_grouped("inplace.fused_linear", {T(x)}, ws, {none, none}, 1e-4, aligned);
          check_grouped("inplace.fused_linear", {T(x)}, ws, {T(b), T(r)}, 1e-4, aligned);
          check_grouped("inplace.rms_norm_linear", {T(x), T(nw), eps}, ws,
                        {none, none, none, Value::integer(0), Value::string("rms_norm")}, 1e-4,
                        aligned);
          // The rotary epilogue over the first two weights' columns (q and k), heads of 8.
          const int64_t d = 8, cols = rows_of[0] + rows_of[1] - (rows_of[0] + rows_of[1]) % d;
          const Tensor cos = random_tensor({1, 1, 1, d}, DType::kFloat32, seed++);
          const Tensor sin = random_tensor({1, 1, 1, d}, DType::kFloat32, seed++);
          check_grouped("inplace.rms_norm_linear", {T(x), T(nw), eps}, ws,
                        {none, T(cos), T(sin), Value::integer(cols), Value::string("rms_norm")},
                        1e-4, aligned);
        }
}

TEST(CudaGroupedProduct, GemvHalfIsTheStackedProductBitwise) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3500;
  const Value none = Value::none(), eps = Value::floating(1e-6);
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (const auto& rows_of : kWeightRows)
      for (int64_t k : {64, 1024, 37})
        for (int64_t rows : {1, 3})
          for (bool aligned : {true, false}) {
            SCOPED_TRACE(str_cat(dtype_name(dt), " weights ", rows_of.size(), " (", rows_of[0],
                                 ") k ", k, " rows ", rows, aligned ? "" : " misaligned"));
            const double tol = dt == DType::kBFloat16 ? 4e-2 : 1e-2;
            std::vector<Tensor> ws;
            for (int64_t n : rows_of) ws.push_back(random_tensor({n, k}, dt, seed++));
            if (!aligned) ws[2] = misaligned(ws[2]);
            int64_t n = 0;
            for (int64_t r : rows_of) n += r;
            const Tensor x = random_tensor({1, rows, k}, dt, seed++);
            const Tensor b = random_tensor({n}, dt, seed++);
            const Tensor r = random_tensor({1, rows, n}, dt, seed++);
            check_grouped("inplace.fused_linear", {T(x)}, ws, {none, none}, tol, aligned);
            check_grouped("inplace.fused_linear", {T(x)}, ws, {T(b), T(r)}, tol, aligned);
            for (const char* norm : {"upcast", "upcast_float_weight"}) {
              SCOPED_TRACE(norm);
              const Tensor nw =
                  random_tensor({k}, std::string(norm) == "upcast" ? dt : DType::kFloat32, seed++);
              check_grouped("inplace.rms_norm_linear", {T(x), T(nw), eps}, ws,
                            {none, none, none, Value::integer(0), Value::string(norm)}, tol,
                            aligned);
            }
          }
}

// The grouped product with a bias per weight against the separate products fused_linear(x, wi,
// bi) on cuda, side by side (bitwise), and against the cpu's grouped product; its norm form with
// the rotary over the first weight's columns against the stacked weights and biases.
void check_grouped_biases(const std::vector<Tensor>& ws, const std::vector<Tensor>& bs,
                          const Tensor& x, const Tensor& nw, const Tensor& cos, const Tensor& sin,
                          const char* norm, double tol) {
  const Value none = Value::none(), eps = Value::floating(1e-6);
  const std::vector<Value> grouped{T(x), T(ws[0]), T(bs[0]), none, more_of(ws), more_of(bs)};
  const Tensor got = on_cuda("inplace.fused_linear", grouped);
  int64_t at = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const int64_t n = ws[i].size(0);
    const Tensor part = on_cuda("inplace.fused_linear", {T(x), T(ws[i]), T(bs[i])});
    EXPECT_TRUE(bitwise(got.slice(-1, at, at + n).contiguous(), part)) << "weight " << i;
    at += n;
  }
  EXPECT_TRUE(close(got, on_cpu("inplace.fused_linear", grouped), tol)) << "against the cpu";
  const int64_t d = cos.size(-1), cols = ws[0].size(0) - ws[0].size(0) % d;
  const std::vector<Value> head{T(x), T(nw), eps};
  std::vector<Value> normed = head, one = head;
  normed.insert(normed.end(), {T(ws[0]), T(bs[0]), T(cos), T(sin), Value::integer(cols),
                               Value::string(norm), more_of(ws), more_of(bs)});
  one.insert(one.end(), {T(stacked(ws)), T(stacked(bs)), T(cos), T(sin), Value::integer(cols),
                         Value::string(norm)});
  const Tensor normed_got = on_cuda("inplace.rms_norm_linear", normed);
  EXPECT_TRUE(bitwise(normed_got, on_cuda("inplace.rms_norm_linear", one))) << "norm form";
  EXPECT_TRUE(close(normed_got, on_cpu("inplace.rms_norm_linear", normed), tol))
      << "norm form against the cpu";
}

TEST(CudaGroupedProduct, MoreBiasesAreTheSeparateProductsBitwise) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3900;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (const auto& rows_of : kWeightRows)
      for (int64_t k : {64, 1024, 37})
        for (int64_t rows : {1, 3}) {
          SCOPED_TRACE(str_cat(dtype_name(dt), " weights ", rows_of.size(), " (", rows_of[0],
                               ") k ", k, " rows ", rows));
          const DType w_dt = dt == DType::kFloat32 ? DType::kBFloat16 : dt;
          std::vector<Tensor> ws, bs;
          for (int64_t n : rows_of) {
            ws.push_back(random_tensor({n, k}, w_dt, seed++));
            bs.push_back(random_tensor({n}, dt, seed++));
          }
          const Tensor x = random_tensor({1, rows, k}, dt, seed++);
          const bool half = dt != DType::kFloat32;
          const Tensor nw = random_tensor({k}, dt, seed++);
          const Tensor cos = random_tensor({1, 1, 1, 8}, dt, seed++);
          const Tensor sin = random_tensor({1, 1, 1, 8}, dt, seed++);
          const double tol = dt == DType::kFloat32 ? 1e-4 : dt == DType::kBFloat16 ? 4e-2 : 1e-2;
          check_grouped_biases(ws, bs, x, nw, cos, sin, half ? "upcast" : "rms_norm", tol);
        }
}

#ifdef INPLACE_WITH_CUDA
// What the kernels cannot read, their supports() refuses with a reason (no GPU needed).
TEST(CudaGroupedProduct, SupportsRefusesWeightsItCannotRead) {
  const OpDef& op = *Registry::get().find("fused_linear");
  const Supports* supports = KernelTable::get().supports(op, DeviceType::kCuda);
  ASSERT_NE(supports, nullptr);
  const Tensor x = random_tensor({1, 1, 16}, DType::kFloat32, 1);
  const Tensor w = random_tensor({8, 16}, DType::kBFloat16, 2);
  const Tensor wt = random_tensor({16, 8}, DType::kBFloat16, 3).t();
  const Value none = Value::none();
  EXPECT_EQ((*supports)({T(x), T(w), none, none, Value::list({T(w), T(w)})}), "");
  EXPECT_EQ((*supports)({T(x), T(w), none, none, Value::list({T(wt)})}),
            "a weight that is not contiguous");
  EXPECT_EQ((*supports)({T(x), T(w), none, none, Value::list({T(w), T(w), T(w), T(w)})}),
            "more than 4 weights in one product");
  const Tensor b = random_tensor({8}, DType::kFloat32, 4);
  const Tensor strided_b = random_tensor({16}, DType::kFloat32, 5).slice(0, 0, 16, 2);
  EXPECT_EQ((*supports)({T(x), T(w), T(b), none, Value::list({T(w)}), Value::list({T(b)})}), "");
  EXPECT_EQ((*supports)({T(x), T(w), T(b), none, Value::list({T(w)}), Value::list({T(strided_b)})}),
            "more biases that are not contiguous or not of the bias's dtype");
}
#endif

}  // namespace
