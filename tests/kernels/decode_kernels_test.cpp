// The decode kernels against the plain ones on random shapes: the packed GEMV (float32, bfloat16
// and float16 weights) against a float64 loop, and the one-pass decode attention against the
// generic attention kernel (forced by an all-true mask, which the decode path never takes).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/thread_pool.h"
#include "kernels/cpu/decode_attention.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/gemv_x86.h"
#include "kernels/cpu/nn.h"
#include "kernels/cpu/rotary.h"
#include "test_util.h"

namespace inplace::cpu {
using namespace inplace::testing;
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kFloat32);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

template <typename W>
using GemvFn = void (*)(const GemvArgs<W>&, int64_t, int64_t);

template <typename W>
void check_gemv(GemvFn<W> kernel, int64_t rows, int64_t n, int64_t k, int64_t pad,
                std::mt19937& rng) {
  Tensor x = random_tensor({rows, k + pad}, rng), wf = random_tensor({n, k + pad}, rng);
  Tensor y = random_tensor({rows, n + pad}, rng), y0 = y.clone();
  std::vector<W> w(static_cast<size_t>(n * (k + pad)));
  for (size_t i = 0; i < w.size(); ++i) w[i] = W(wf.data<float>()[i]);
  const float alpha = 0.5f, beta = rows % 2 ? 0.0f : 2.0f;
  GemvArgs<W> a{x.data<float>(), k + pad, rows,  w.data(), k + pad, n, k,
                y.data<float>(), n + pad, alpha, beta};
  // Two shares of the columns, as two threads would run them.
  kernel(a, 0, n / 3);
  kernel(a, n / 3, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int64_t e = 0; e < k; ++e) {
        const double p = double(x.data<float>()[r * (k + pad) + e]) *
                         double(static_cast<float>(w[static_cast<size_t>(j * (k + pad) + e)]));
        s += p;
        mag += std::fabs(p);
      }
      double want = alpha * s + (beta == 0 ? 0.0 : beta * y0.data<float>()[r * (n + pad) + j]);
      double got = y.data<float>()[r * (n + pad) + j];
      ASSERT_NEAR(got, want, 1e-5 * (mag + 1))
          << "rows " << rows << " n " << n << " k " << k << " at (" << r << ", " << j << ")";
    }
  for (int64_t r = 0; r < rows; ++r)  // padding columns untouched
    for (int64_t j = n; j < n + pad; ++j)
      ASSERT_EQ(y.data<float>()[r * (n + pad) + j], y0.data<float>()[r * (n + pad) + j]);
}

// Every kernel this CPU can run: the dispatched one, the portable loop, AVX2 and AVX-512.
template <typename W>
std::vector<std::pair<const char*, GemvFn<W>>> gemv_kernels() {
  std::vector<std::pair<const char*, GemvFn<W>>> k = {{"dispatched", &gemv},
                                                      {"portable", &gemv_portable}};
  if (x86::avx2_supported()) k.emplace_back("avx2", GemvFn<W>(&x86::gemv_avx2));
  if (x86::avx512_supported()) k.emplace_back("avx512", GemvFn<W>(&x86::gemv_avx512));
  return k;
}

TEST(DecodeKernels, GemvEqualsAFloat64LoopOnRandomShapes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 48; ++trial) {
    const int64_t rows = 1 + trial % kGemvMaxRows;
    const int64_t n = 1 + static_cast<int64_t>(rng() % 70);
    // Mostly short rows (every tail), some model-sized ones (the unrolled loop).
    const int64_t k = trial % 8 == 7 ? 448 + static_cast<int64_t>(rng() % 1000)
                                     : 1 + static_cast<int64_t>(rng() % 300);
    const int64_t pad = trial % 3;
    for (auto [name, kernel] : gemv_kernels<float>()) {
      SCOPED_TRACE(std::string("f32 ") + name);
      check_gemv<float>(kernel, rows, n, k, pad, rng);
    }
    for (auto [name, kernel] : gemv_kernels<BFloat16>()) {
      SCOPED_TRACE(std::string("bf16 ") + name);
      check_gemv<BFloat16>(kernel, rows, n, k, pad, rng);
    }
    for (auto [name, kernel] : gemv_kernels<Half>()) {
      SCOPED_TRACE(std::string("f16 ") + name);
      check_gemv<Half>(kernel, rows, n, k, pad, rng);
    }
  }
}

TEST(DecodeKernels, LinearTakesTheGemvAndEqualsTheBlasProduct) {
  std::mt19937 rng(5);
  for (int64_t rows : {1, 3, 4, 5}) {  // 5 rows: BLAS
    Tensor x = random_tensor({rows, 96}, rng), w = random_tensor({40, 96}, rng);
    Tensor out = Tensor::empty({rows, 40}, DType::kFloat32);
    matmul(x, w.t(), out);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 40; ++j) {
        double s = 0;
        for (int64_t e = 0; e < 96; ++e)
          s += double(x.data<float>()[r * 96 + e]) * double(w.data<float>()[j * 96 + e]);
        ASSERT_NEAR(out.data<float>()[r * 40 + j], s, 1e-4);
      }
  }
}

TEST(DecodeKernels, GemvSharedByThreadsEqualsOneThreadBitForBit) {
  std::mt19937 rng(9);
  ThreadPool pool(3);
  for (int64_t n : {301, 1024, 1408}) {
    Tensor x = random_tensor({1, 512}, rng), w = random_tensor({n, 512}, rng);
    Tensor serial = Tensor::empty({1, n}, DType::kFloat32);
    Tensor shared = Tensor::empty({1, n}, DType::kFloat32);
    matmul(x, w.t(), serial);
    {
      ScopedThreadPool use(&pool);
      matmul(x, w.t(), shared);
    }
    EXPECT_TRUE(tensor_equal(shared, serial, 0)) << "n " << n;
  }
}

// Decode attention (no mask) against the generic kernel (an all-true bool mask).
void check_attention(const Shape& q_shape, const Shape& kv_shape, int64_t s_used, bool causal,
                     std::mt19937& rng) {
  Tensor q = random_tensor(q_shape, rng);
  Tensor kc = random_tensor(kv_shape, rng), vc = random_tensor(kv_shape, rng);
  Tensor k = kc.slice(-2, 0, s_used, 1), v = vc.slice(-2, 0, s_used, 1);  // a cache prefix
  Shape out_shape = q_shape;
  Tensor fast = Tensor::empty(out_shape, DType::kFloat32);
  Tensor plain = Tensor::empty(out_shape, DType::kFloat32);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q_shape.back()));
  ASSERT_TRUE(try_decode_attention(q, k, v, Tensor(), scale, causal, fast, Tensor()));
  const int64_t L = q_shape[q_shape.size() - 2];
  Tensor mask = Tensor::full({L, s_used}, Scalar(true), DType::kBool);
  if (causal)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = i + 1; j < s_used; ++j) mask.data<bool>()[i * s_used + j] = false;
  scaled_dot_product_attention(q, k, v, mask, scale, false, plain);
  EXPECT_TRUE(tensor_equal(fast, plain, 2e-5))
      << "q " << shape_str(q_shape) << " kv " << shape_str(kv_shape) << " s " << s_used;
}

TEST(DecodeKernels, DecodeAttentionEqualsTheGenericKernelOnRandomShapes) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t hk = 1 + trial % 3, g = 1 + trial % 4, d = 8 * (1 + trial % 9);
    const int64_t s_max = 1 + static_cast<int64_t>(rng() % 300);
    const int64_t s = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(s_max));
    const int64_t L = trial % 5 == 0 ? s : 1;
    // Grouped query heads: q [1, hk, g, L, d] against k [1, hk, 1, s, d] (enable_gqa's form).
    check_attention({1, hk, g, L, d}, {1, hk, 1, s_max, d}, s, L > 1, rng);
    check_attention({2, hk * g, L, d}, {2, hk * g, s_max, d}, s, false, rng);
  }
}

TEST(DecodeKernels, DecodeAttentionSharedByThreadsEqualsOneThreadBitForBit) {
  // Long enough prefixes that the groups are split over the pool, in every layout the decode
  // path takes: grouped heads, plain heads, a batch, several query rows.
  std::mt19937 rng(21);
  ThreadPool pool(3);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t hk = 1 + trial % 4, g = 1 + trial % 3, d = trial % 2 ? 64 : 128;
    const int64_t s_max = 2048, s = 300 + static_cast<int64_t>(rng() % 1700);
    const int64_t L = trial % 4 == 3 ? 3 : 1, batch = 1 + trial % 2;
    const Shape q_shape = trial % 3 ? Shape{batch, hk, g, L, d} : Shape{batch, hk * g, L, d};
    const Shape kv_shape =
        trial % 3 ? Shape{batch, hk, 1, s_max, d} : Shape{batch, hk * g, s_max, d};
    Tensor q = random_tensor(q_shape, rng);
    Tensor kc = random_tensor(kv_shape, rng), vc = random_tensor(kv_shape, rng);
    Tensor k = kc.slice(-2, 0, s, 1), v = vc.slice(-2, 0, s, 1);
    Tensor serial = Tensor::empty(q_shape, DType::kFloat32);
    Tensor shared = Tensor::full(q_shape, Scalar(7.0), DType::kFloat32);
    ASSERT_TRUE(try_decode_attention(q, k, v, Tensor(), 0.125, L > 1, serial, Tensor()));
    {
      ScopedThreadPool use(&pool);
      ASSERT_TRUE(try_decode_attention(q, k, v, Tensor(), 0.125, L > 1, shared, Tensor()));
    }
    EXPECT_TRUE(tensor_equal(shared, serial, 0))
        << "q " << shape_str(q_shape) << " kv " << shape_str(kv_shape) << " s " << s;
  }
}

TEST(DecodeKernels, HalfDecodeAttentionIsTheFloatKernelOnTheWidenedOperands) {
  // The caches read as bfloat16 or float16 give the float kernel's result on their float
  // values, rounded once: bit for bit, on one thread and shared by three.
  std::mt19937 rng(33);
  ThreadPool pool(3);
  for (int trial = 0; trial < 24; ++trial) {
    const DType half = trial % 2 ? DType::kFloat16 : DType::kBFloat16;
    const int64_t hk = 1 + trial % 3, g = 1 + trial % 4, d = 16 * (1 + trial % 8);
    const int64_t s_max = 64 + static_cast<int64_t>(rng() % 1200);
    const int64_t s = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(s_max));
    const int64_t L = trial % 5 == 0 ? 3 : 1;
    const Shape q_shape{1, hk, g, L, d}, kv_shape{1, hk, 1, s_max, d};
    const Tensor q = random_tensor(q_shape, rng).to(half);
    const Tensor kc = random_tensor(kv_shape, rng).to(half);
    const Tensor vc = random_tensor(kv_shape, rng).to(half);
    const Tensor k = kc.slice(-2, 0, s, 1), v = vc.slice(-2, 0, s, 1);
    Tensor want = Tensor::empty(q_shape, DType::kFloat32);
    ASSERT_TRUE(try_decode_attention(
        q.to(DType::kFloat32), kc.to(DType::kFloat32).slice(-2, 0, s, 1),
        vc.to(DType::kFloat32).slice(-2, 0, s, 1), Tensor(), 0.25, L > 1, want, Tensor()));
    const Tensor rounded = want.to(half);
    for (bool shared : {false, true}) {
      Tensor got = Tensor::empty(q_shape, half);
      {
        ScopedThreadPool use(shared ? &pool : nullptr);
        ASSERT_TRUE(try_decode_attention(q, k, v, Tensor(), 0.25, L > 1, got, Tensor()));
      }
      EXPECT_TRUE(tensor_equal(got, rounded, 0))
          << dtype_name(half) << " s " << s << " of " << s_max << ", d " << d
          << (shared ? ", shared" : "");
    }
  }
}

TEST(DecodeKernels, RotaryEqualsTheChainBitForBit) {
  // x * cos + cat(-x[..., h:], x[..., :h]) * sin, element by element in float, against the
  // one-pass kernel on a transposed (strided) x and broadcast tables.
  std::mt19937 rng(4);
  for (int64_t d : {2, 8, 64}) {
    Tensor xs = random_tensor({1, 3, 4, d}, rng);
    Tensor x = xs.transpose(1, 2);  // [1, 4, 3, d], strided
    Tensor cos = random_tensor({1, 4, 1, d}, rng), sin = random_tensor({1, 4, 1, d}, rng);
    Tensor out = Tensor::empty({1, 4, 3, d}, DType::kFloat32);
    rotary_embedding(x, cos, sin, out);
    const int64_t h = d / 2;
    for (int64_t p = 0; p < 4; ++p)
      for (int64_t hd = 0; hd < 3; ++hd)
        for (int64_t i = 0; i < d; ++i) {
          auto xv = [&](int64_t e) { return xs.data<float>()[(hd * 4 + p) * d + e]; };
          const float c = cos.data<float>()[p * d + i], s = sin.data<float>()[p * d + i];
          const float rot = i < h ? -xv(i + h) : xv(i - h);
          const float want = xv(i) * c + rot * s;
          ASSERT_EQ(out.data<float>()[(p * 3 + hd) * d + i], want) << d << " " << p << " " << i;
        }
  }
}

TEST(DecodeKernels, DecodeAttentionDeclinesWhatItDoesNotCover) {
  std::mt19937 rng(1);
  Tensor q = random_tensor({1, 2, 1, 8}, rng), k = random_tensor({1, 2, 4, 8}, rng);
  Tensor out = Tensor::empty({1, 2, 1, 8}, DType::kFloat32);
  Tensor mask = Tensor::full({1, 4}, Scalar(true), DType::kBool);
  EXPECT_FALSE(try_decode_attention(q, k, k, mask, 1.0, false, out, Tensor()));
  EXPECT_FALSE(try_decode_attention(q.to(DType::kFloat64), k.to(DType::kFloat64),
                                    k.to(DType::kFloat64), Tensor(), 1.0, false,
                                    out.to(DType::kFloat64), Tensor()));
}

}  // namespace
}  // namespace inplace::cpu
