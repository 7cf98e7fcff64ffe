// rotary_embedding at float32, bfloat16 and float16 is bitwise the chain it replaces, run op by
// op through the cpu kernels: x * cos + cat(-x[..., h:], x[..., :h], -1) * sin, each op rounding
// its result to the dtype. Random draws over shapes, broadcast cos/sin (one position for every
// head, or one per row) and strided x (a transposed or sliced view, as q after view/transpose).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

// Same dtype, shape and bytes (so -0 and +0, and NaN payloads, count as different).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure()
           << "dtype/shape " << dtype_name(a.dtype()) << " " << shape_str(a.shape()) << " vs "
           << dtype_name(b.dtype()) << " " << shape_str(b.shape());
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t bytes = static_cast<size_t>(ca.numel()) * dtype_size(ca.dtype());
  const auto* pa = static_cast<const unsigned char*>(ca.data_ptr());
  const auto* pb = static_cast<const unsigned char*>(cb.data_ptr());
  for (size_t i = 0; i < bytes; ++i)
    if (pa[i] != pb[i]) {
      const int64_t e = static_cast<int64_t>(i / dtype_size(ca.dtype()));
      return ::testing::AssertionFailure()
             << "element " << e << ": " << ca.to(DType::kFloat64).data<double>()[e] << " vs "
             << cb.to(DType::kFloat64).data<double>()[e];
    }
  return ::testing::AssertionSuccess();
}

Tensor chain(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t h = x.size(-1) / 2;
  Tensor x1 = call_t("aten.slice.Tensor", {T(x), I(-1), I(0), I(h)});
  Tensor x2 = call_t("aten.slice.Tensor", {T(x), I(-1), I(h), I(INT64_MAX)});
  Tensor rot =
      call_t("aten.cat.default", {L({T(call_t("aten.neg.default", {T(x2)})), T(x1)}), I(-1)});
  return call_t("aten.add.Tensor", {T(call_t("aten.mul.Tensor", {T(x), T(cos)})),
                                    T(call_t("aten.mul.Tensor", {T(rot), T(sin)}))});
}

TEST(RotaryDtypes, BitwiseTheChainAtEveryFloatDtype) {
  std::mt19937 rng(29);
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int draw = 0; draw < 12; ++draw) {
      const int64_t heads = 1 + draw % 4, rows = 1 + draw % 3, d = 8 << (draw % 3);
      SCOPED_TRACE(str_cat(dtype_name(dt), " heads ", heads, " rows ", rows, " d ", d));
      // q as the model has it: [1, rows, heads, d] viewed as [1, heads, rows, d].
      Tensor x = uniform_tensor({1, rows, heads, d}, dt, rng).transpose(1, 2);
      if (draw % 4 == 3)  // a strided last dim: every other column of a wider tensor
        x = uniform_tensor({1, heads, rows, 2 * d}, dt, rng).slice(3, 0, std::nullopt, 2);
      // cos/sin as float32 tables rounded to the dtype (Hugging Face's .to(x.dtype)), scaled
      // so some products round; one position per row, broadcast over the heads.
      Tensor angle = uniform_tensor({1, 1, rows, d}, DType::kFloat32, rng);
      Tensor cos =
          call_t("aten.mul.Tensor", {T(call_t("aten.cos.default", {T(angle)})), F(3.7)}).to(dt);
      Tensor sin =
          call_t("aten.mul.Tensor", {T(call_t("aten.sin.default", {T(angle)})), F(3.7)}).to(dt);
      if (draw % 2) {  // one position for every row (decode)
        cos = cos.slice(2, 0, 1);
        sin = sin.slice(2, 0, 1);
      }
      Tensor fused = call_t("inplace.rotary_embedding", {T(x), T(cos), T(sin)});
      EXPECT_EQ(fused.dtype(), dt);
      EXPECT_TRUE(same_bits(fused, chain(x, cos, sin)));
    }
}

TEST(RotaryDtypes, MixedDtypesAreRefusedNamingTheOp) {
  std::mt19937 rng(3);
  Tensor x = uniform_tensor({2, 8}, DType::kBFloat16, rng);
  Tensor c = uniform_tensor({2, 8}, DType::kFloat32, rng);
  try {
    call_t("inplace.rotary_embedding", {T(x), T(c), T(c)});
    FAIL() << "a float32 cos with a bfloat16 x is another chain";
  } catch (const Error& e) {
    EXPECT_TRUE(mentions(e.what(), {"[rotary_embedding]", "bfloat16", "float32"}));
  }
}

}  // namespace
}  // namespace inplace::testing
