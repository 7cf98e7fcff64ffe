// A grouped product (fused_linear's and rms_norm_linear's more_weights) on the cpu is, bit for
// bit, the product with its weights stacked along the output dim: every row count (decode, the
// GEMV's passes of four, the widened-weight matmul), bias and residual over all its columns,
// float32 and half inputs, the norm prologue and the rotary epilogue over the columns of several
// weights. With a bias per weight (more_biases) it is, bit for bit, the separate products, each
// with its own bias. The shape rule refuses what does not stack.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

// The weights of n[i] rows each, stacked.
Tensor stacked(const std::vector<Tensor>& ws) {
  std::vector<Value> items;
  for (const Tensor& w : ws) items.push_back(T(w));
  return call_t("cat", {L(items), I(0)});
}

std::vector<Tensor> weights(const std::vector<int64_t>& rows, int64_t k, DType dt,
                            std::mt19937& rng) {
  std::vector<Tensor> ws;
  for (int64_t n : rows) ws.push_back(uniform_tensor({n, k}, dt, rng));
  return ws;
}

Value more_of(const std::vector<Tensor>& ws) {
  std::vector<Value> items;
  for (size_t i = 1; i < ws.size(); ++i) items.push_back(T(ws[i]));
  return L(items);
}

TEST(GroupedProduct, FusedLinearIsTheStackedProductBitForBit) {
  std::mt19937 rng(11);
  const int64_t k = 40;
  for (DType x_dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (const std::vector<int64_t>& rows_of :
         {std::vector<int64_t>{40, 8, 8}, std::vector<int64_t>{24, 7, 13, 2}}) {
      const DType w_dt = x_dt == DType::kFloat32 ? DType::kBFloat16 : x_dt;
      const std::vector<Tensor> ws = weights(rows_of, k, w_dt, rng);
      const Tensor w = stacked(ws);
      const int64_t n = w.size(0);
      for (int64_t rows : {1, 3, 5, 300}) {
        SCOPED_TRACE(str_cat(dtype_name(x_dt), " rows ", rows, " weights ", ws.size()));
        // x contiguous, or its rows strided (the matmul's path at float32).
        const Tensor x = uniform_tensor({1, rows, k}, x_dt, rng);
        const Tensor xs = uniform_tensor({1, rows, k + 8}, x_dt, rng).slice(2, 0, k);
        const Tensor b = uniform_tensor({n}, x_dt, rng);
        const Tensor r = uniform_tensor({1, rows, n}, x_dt, rng);
        for (const Tensor& input : {x, xs})
          for (const Value& bias : {None(), T(b)})
            for (const Value& residual : {None(), T(r)}) {
              const Tensor want = call_t("inplace.fused_linear", {T(input), T(w), bias, residual});
              const Tensor got =
                  call_t("inplace.fused_linear", {T(input), T(ws[0]), bias, residual, more_of(ws)});
              EXPECT_TRUE(tensor_equal(got, want))
                  << "bias " << !bias.is_none() << " residual " << !residual.is_none()
                  << " strided " << !input.is_contiguous();
            }
      }
    }
}

TEST(GroupedProduct, NormFormWithRotaryIsTheStackedProductBitForBit) {
  std::mt19937 rng(12);
  const int64_t k = 64, d = 8;
  const std::vector<Tensor> ws = weights({32, 16, 16}, k, DType::kBFloat16, rng);
  const Tensor w = stacked(ws);
  for (int64_t rows : {1, 4}) {
    SCOPED_TRACE(str_cat("rows ", rows));
    const Tensor x = uniform_tensor({1, rows, k}, DType::kFloat32, rng);
    const Tensor nw = uniform_tensor({k}, DType::kFloat32, rng);
    const Tensor cos = uniform_tensor({1, 1, 1, d}, DType::kFloat32, rng);
    const Tensor sin = uniform_tensor({1, 1, 1, d}, DType::kFloat32, rng);
    // The rotated prefix spans the first two weights' columns (q and k).
    const std::vector<Value> tail{None(), T(cos), T(sin), I(48), Value::string("rms_norm")};
    std::vector<Value> one{T(x), T(nw), F(1e-5), T(w)}, grouped{T(x), T(nw), F(1e-5), T(ws[0])};
    one.insert(one.end(), tail.begin(), tail.end());
    grouped.insert(grouped.end(), tail.begin(), tail.end());
    grouped.push_back(more_of(ws));
    EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", grouped),
                             call_t("inplace.rms_norm_linear", one)));
  }
  // At a half dtype, Hugging Face's upcast norm.
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const std::vector<Tensor> hw = weights({32, 16, 16}, k, dt, rng);
    const Tensor x = uniform_tensor({1, 1, k}, dt, rng);
    const Tensor nw = uniform_tensor({k}, dt, rng);
    const std::vector<Value> mid{None(), None(), None(), I(0), Value::string("upcast")};
    std::vector<Value> one{T(x), T(nw), F(1e-6), T(stacked(hw))};
    std::vector<Value> grouped{T(x), T(nw), F(1e-6), T(hw[0])};
    one.insert(one.end(), mid.begin(), mid.end());
    grouped.insert(grouped.end(), mid.begin(), mid.end());
    grouped.push_back(more_of(hw));
    EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", grouped),
                             call_t("inplace.rms_norm_linear", one)));
  }
}

// fused_linear(x, w0, b0, r, [w1, ..], [b1, ..]) is the product with the weights and the biases
// stacked and, at decode size, the separate products fused_linear(x, wi, bi, ri) side by side (ri
// the residual's block); rms_norm_linear's is its product with them stacked.
TEST(GroupedProduct, MoreBiasesAreTheSeparateProductsBitForBit) {
  std::mt19937 rng(14);
  const int64_t k = 40;
  for (DType x_dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (const std::vector<int64_t>& rows_of :
         {std::vector<int64_t>{40, 8, 8}, std::vector<int64_t>{24, 7, 13, 2}}) {
      const DType w_dt = x_dt == DType::kFloat32 ? DType::kBFloat16 : x_dt;
      const std::vector<Tensor> ws = weights(rows_of, k, w_dt, rng);
      std::vector<Tensor> bs;
      for (int64_t n : rows_of) bs.push_back(uniform_tensor({n}, x_dt, rng));
      const Tensor w = stacked(ws), b = stacked(bs);
      const int64_t n = w.size(0);
      for (int64_t rows : {1, 3, 5, 300}) {
        SCOPED_TRACE(str_cat(dtype_name(x_dt), " rows ", rows, " weights ", ws.size()));
        const Tensor x = uniform_tensor({1, rows, k}, x_dt, rng);
        const Tensor r = uniform_tensor({1, rows, n}, x_dt, rng);
        for (const Value& residual : {None(), T(r)}) {
          const Tensor got = call_t("inplace.fused_linear",
                                    {T(x), T(ws[0]), T(bs[0]), residual, more_of(ws), more_of(bs)});
          std::vector<Value> parts;
          int64_t at = 0;
          for (size_t i = 0; i < ws.size(); ++i) {
            const int64_t ni = ws[i].size(0);
            const Value ri = residual.is_none() ? None() : T(r.slice(-1, at, at + ni).contiguous());
            parts.push_back(T(call_t("inplace.fused_linear", {T(x), T(ws[i]), T(bs[i]), ri})));
            at += ni;
          }
          // The stacked product at every size; the separate ones where the product is a GEMV
          // (the matmul of a long prompt blocks by the columns).
          EXPECT_TRUE(
              tensor_equal(got, call_t("inplace.fused_linear", {T(x), T(w), T(b), residual})))
              << "residual " << !residual.is_none();
          if (rows <= 256 || x_dt != DType::kFloat32)
            EXPECT_TRUE(tensor_equal(got, call_t("cat", {L(parts), I(-1)})))
                << "residual " << !residual.is_none();
          if (!residual.is_none() || rows > 4) continue;
          // The norm form, its rotary over the first weight's columns (heads of 8).
          const Tensor nw = uniform_tensor({k}, x_dt, rng);
          const Tensor cos = uniform_tensor({1, 1, 1, 8}, x_dt, rng);
          const Tensor sin = uniform_tensor({1, 1, 1, 8}, x_dt, rng);
          const Value norm = Value::string(x_dt == DType::kFloat32 ? "rms_norm" : "upcast");
          const std::vector<Value> head{T(x), T(nw), F(1e-6)};
          std::vector<Value> one = head, grouped = head;
          one.insert(one.end(), {T(w), T(b), T(cos), T(sin), I(16), norm});
          grouped.insert(grouped.end(), {T(ws[0]), T(bs[0]), T(cos), T(sin), I(16), norm,
                                         more_of(ws), more_of(bs)});
          EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", grouped),
                                   call_t("inplace.rms_norm_linear", one)));
        }
      }
    }
}

TEST(GroupedProduct, ShapeRuleRefusesWhatDoesNotStack) {
  std::mt19937 rng(13);
  const Tensor x = uniform_tensor({1, 1, 16}, DType::kFloat32, rng);
  const std::vector<Tensor> five = weights({8, 8, 8, 8, 8}, 16, DType::kBFloat16, rng);
  EXPECT_TRUE(
      mentions(error_of([&] {
                 call_t("inplace.fused_linear", {T(x), T(five[0]), None(), None(), more_of(five)});
               }),
               {"[fused_linear]", "5 weights", "at most 4"}));
  const Tensor other_k = uniform_tensor({8, 12}, DType::kBFloat16, rng);
  EXPECT_TRUE(mentions(
      error_of([&] {
        call_t("inplace.fused_linear", {T(x), T(five[0]), None(), None(), L({T(other_k)})});
      }),
      {"[fused_linear]", "does not fit weight [8,12]"}));
  const Tensor other_dtype = uniform_tensor({8, 16}, DType::kFloat32, rng);
  EXPECT_TRUE(mentions(
      error_of([&] {
        call_t("inplace.fused_linear", {T(x), T(five[0]), None(), None(), L({T(other_dtype)})});
      }),
      {"[fused_linear]", "more_weights of float32"}));
  // A bias spans every weight's columns.
  const Tensor short_bias = uniform_tensor({8}, DType::kFloat32, rng);
  EXPECT_TRUE(mentions(
      error_of([&] {
        call_t("inplace.fused_linear", {T(x), T(five[0]), T(short_bias), None(), L({T(five[1])})});
      }),
      {"[fused_linear]", "bias [8]", "16 columns"}));
  // With more_biases, a bias for each weight, each of its weight's rows.
  const Tensor b16 = uniform_tensor({16}, DType::kFloat32, rng);
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.fused_linear", {T(x), T(five[0]), None(), None(),
                                                         L({T(five[1])}), L({T(short_bias)})});
                       }),
                       {"[fused_linear]", "1 more_biases for 2 weights without a bias"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.fused_linear",
                                {T(x), T(five[0]), T(short_bias), None(),
                                 L({T(five[1]), T(five[2])}), L({T(short_bias)})});
                       }),
                       {"[fused_linear]", "1 more_biases for 3 weights"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.fused_linear", {T(x), T(five[0]), T(short_bias), None(),
                                                         L({T(five[1])}), L({T(b16)})});
                       }),
                       {"[fused_linear]", "bias [16]", "8 columns"}));
}

}  // namespace
}  // namespace inplace
