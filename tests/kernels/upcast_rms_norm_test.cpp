// upcast_rms_norm's cpu kernel against the chain it replaces, run op by op by the chain's own
// kernels (the float32 upcast, pow 2, mean over the last dim, + eps, rsqrt, the scaling, the
// rounding to the dtype and the weight; or the weight in float32 and one rounding): byte-equal
// on fresh draws at bf16 and fp16, rows of every length (every tail of the sum's four chains),
// one row and several, magnitudes from tiny to overflowing the squares, zero rows, infinities
// and NaNs; and a strided input (the kernel's fallback, the chain itself) alike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/cpu/chain.h"
#include "kernels/cpu/elementwise.h"
#include "test_util.h"

namespace inplace::cpu {
using namespace inplace::testing;
namespace {

const ChainOp kNorm("upcast_rms_norm"), kPow("pow.Tensor_Scalar"), kMean("mean.dim"),
    kAdd("add.Tensor"), kRsqrt("rsqrt"), kMul("mul.Tensor");

Tensor chain(const Tensor& x, const Tensor& w, double eps, bool in_float) {
  Tensor up = Tensor::empty(x.shape(), DType::kFloat32);
  copy_cast(up, x);
  const Value upv = Value::from_tensor(up);
  const Tensor var = kMean({Value::from_tensor(kPow({upv, Value::integer(2)})),
                            Value::int_list({-1}), Value::boolean(true)});
  const Tensor inv =
      kRsqrt({Value::from_tensor(kAdd({Value::from_tensor(var), Value::floating(eps)}))});
  const Tensor h = kMul({upv, Value::from_tensor(inv)});
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (in_float) {
    copy_cast(out, kMul({Value::from_tensor(h), Value::from_tensor(w)}));
    return out;
  }
  Tensor rounded = Tensor::empty(x.shape(), x.dtype());
  copy_cast(rounded, h);
  kMul.into({Value::from_tensor(w), Value::from_tensor(rounded)}, out);
  return out;
}

bool bytes_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// x in [-scale, scale] (scale 0: magnitudes log-uniform over 2^-40 .. 2^40, so that the
// double sum of squares rounds and its order shows), with some rows zero and some elements inf
// or NaN when `specials`.
Tensor draw(const Shape& shape, DType dt, float scale, bool specials, std::mt19937& rng) {
  Tensor f = Tensor::empty(shape, DType::kFloat32);
  std::uniform_real_distribution<float> u(-scale, scale), e(-40.0f, 40.0f);
  const int64_t d = shape.back();
  for (int64_t i = 0; i < f.numel(); ++i) {
    float v = scale > 0 ? u(rng) : (rng() % 2 ? -1.0f : 1.0f) * std::exp2(e(rng));
    if (specials && (i / d) % 3 == 1) v = 0.0f;  // a zero row: rsqrt(eps)
    if (specials && rng() % 97 == 0)
      v = rng() % 2 ? std::numeric_limits<float>::infinity() : std::nanf("");
    f.data<float>()[i] = v;
  }
  return f.to(dt);
}

TEST(UpcastRmsNorm, KernelIsTheChainBitForBit) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 120; ++trial) {
    const DType dt = trial % 2 ? DType::kBFloat16 : DType::kFloat16;
    const bool in_float = trial % 3 == 2;
    const int64_t d = trial % 10 == 9 ? 2048 : 1 + static_cast<int64_t>(rng() % 300);
    const int64_t rows = 1 + trial % 4;
    const float scale = std::array<float, 6>{1e-3f, 1.0f, 0.0f, 30.0f, 3e3f, 3e20f}[trial % 6];
    const bool specials = trial % 7 == 3;
    const double eps = trial % 2 ? 1e-6 : 1e-5;
    SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " d " << d << " rows " << rows
                                      << " scale " << scale << " in_float " << in_float);
    const Tensor x = draw({1, rows, d}, dt, scale, specials, rng);
    const Tensor w = draw({d}, in_float ? DType::kFloat32 : dt, 2.0f, false, rng);
    const Tensor want = chain(x, w, eps, in_float);
    const Tensor got = kNorm({Value::from_tensor(x), Value::from_tensor(w), Value::floating(eps),
                              Value::boolean(in_float)});
    EXPECT_TRUE(bytes_equal(got, want));
    // A strided input (every other row of a larger tensor) takes the chain: equal too.
    const Tensor wide = draw({1, 2 * rows, d}, dt, scale, specials, rng);
    const Tensor strided = wide.slice(1, 0, 2 * rows, 2);
    EXPECT_TRUE(bytes_equal(kNorm({Value::from_tensor(strided), Value::from_tensor(w),
                                   Value::floating(eps), Value::boolean(in_float)}),
                            chain(strided, w, eps, in_float)));
  }
}

// Gemma's forms: weight_offset (the float32 weight 1 + w, as `add(to(w, float32), 1.0)` computes
// it) and a residual added after the norm (add.Tensor at the dtype), alone and together, against
// the chain with those two ops; the residual also the result itself (an in-place add).
TEST(UpcastRmsNorm, OffsetAndResidualAreTheChainBitForBit) {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 96; ++trial) {
    const DType dt = trial % 2 ? DType::kBFloat16 : DType::kFloat16;
    const double offset = trial % 3 == 0 ? 0.0 : trial % 3 == 1 ? 1.0 : 0.3;
    const bool residual = trial % 4 >= 2, in_place = trial % 8 == 7;
    const int64_t d = trial % 10 == 9 ? 2048 : 1 + static_cast<int64_t>(rng() % 300);
    const int64_t rows = 1 + trial % 3;
    const float scale = std::array<float, 5>{1e-3f, 1.0f, 0.0f, 30.0f, 3e3f}[trial % 5];
    const bool specials = trial % 7 == 3;
    const double eps = 1e-6;
    SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " d " << d << " rows " << rows
                                      << " offset " << offset << " residual " << residual);
    const Tensor x = draw({1, rows, d}, dt, scale, specials, rng);
    Tensor w = draw({d}, dt, 2.0f, false, rng);
    if (trial % 5 == 1) {  // a weight of -0 (bf16 and fp16 alike: the sign bit): -0 + 0 is +0
      const uint16_t negative_zero = 0x8000;
      std::memcpy(w.data_ptr(), &negative_zero, 2);
    }
    const Tensor r = draw({1, rows, d}, dt, 4.0f, specials, rng);
    Tensor want;
    if (offset != 0) {
      Tensor f = Tensor::empty(w.shape(), DType::kFloat32);
      copy_cast(f, w);
      want = chain(x, kAdd({Value::from_tensor(f), Value::floating(offset)}), eps, true);
    } else {
      want = chain(x, w, eps, false);
    }
    if (residual) want = kAdd({Value::from_tensor(r), Value::from_tensor(want)});
    Args args = {Value::from_tensor(x),   Value::from_tensor(w),
                 Value::floating(eps),    Value::boolean(offset != 0),
                 Value::floating(offset), residual ? Value::from_tensor(r.clone()) : Value::none()};
    Tensor got;
    if (in_place && residual) {
      got = args[5].tensor;
      kNorm.into(args, got);
    } else {
      got = kNorm(args);
    }
    EXPECT_TRUE(bytes_equal(got, want));
  }
}

}  // namespace
}  // namespace inplace::cpu
