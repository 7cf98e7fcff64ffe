// Batched matrix product with broadcast batch dims. When b is shared by every batch and a's batch
// dims flatten into its rows (x @ W in a linear layer), the whole product is one gemm.
#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <optional>
#include <type_traits>
#include <vector>

#include "core/strided_loop.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/gemv_rows.h"
#include "kernels/cpu/matrix.h"

namespace inplace::cpu {

namespace {

// Strides of t's batch dims (all but the last two), broadcast to `batch` (0 where broadcast).
Shape batch_strides(const Tensor& t, const Shape& batch) {
  const size_t tb = static_cast<size_t>(t.dim() - 2);
  IP_ASSERT(tb <= batch.size(), "operand batch dims fit the output's");
  Shape st(batch.size(), 0);
  const size_t lead = batch.size() - tb;
  for (size_t i = 0; i < tb; ++i) {
    IP_ASSERT(t.shape()[i] == batch[lead + i] || t.shape()[i] == 1, "batch dims broadcast");
    st[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  return st;
}

// The single stride of dims that flatten into one evenly strided dim, else nullopt.
std::optional<int64_t> flat_stride(const Shape& sizes, const Shape& strides) {
  int64_t stride = 0, span = 0;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (span == 0) {
      stride = strides[d];
      span = sizes[d];
    } else if (strides[d] != stride * span) {
      return std::nullopt;
    } else {
      span *= sizes[d];
    }
  }
  return stride;
}

// Row i of a half-type product over unit-stride rows of b: acc[j] = sum over p (in order from
// 0) of a[p] * b[p][j] in float, for j < the multiple of 16 it returns. 64 outputs at a time are
// held over all of p, so each row of b is read once per 64 outputs. The product of two bfloat16
// (or two float16) values is exact in float, so whether the compiler fuses the multiply into
// the add (it does, in the AVX-512 and AVX2 clones) changes no bit: every output's sum is the
// scalar loop's, whichever vector width the CPU runs it at.
template <int64_t B, typename T>
__attribute__((always_inline)) inline void half_unit_block(const T* a, int64_t a_cs, int64_t k,
                                                           const T* b, int64_t b_rs, float* acc) {
  float blk[B] = {};
  for (int64_t p = 0; p < k; ++p) {
    const float av = static_cast<float>(a[p * a_cs]);
    const T* brow = b + p * b_rs;
    for (int64_t j = 0; j < B; ++j) blk[j] += av * static_cast<float>(brow[j]);
  }
  std::copy(blk, blk + B, acc);
}

template <typename T>
__attribute__((always_inline)) inline int64_t half_unit_rows(const T* a, int64_t a_cs, int64_t k,
                                                             const T* b, int64_t b_rs, int64_t n,
                                                             float* acc) {
  int64_t j0 = 0;
  for (; j0 + 64 <= n; j0 += 64) half_unit_block<64>(a, a_cs, k, b + j0, b_rs, acc + j0);
  for (; j0 + 16 <= n; j0 += 16) half_unit_block<16>(a, a_cs, k, b + j0, b_rs, acc + j0);
  return j0;
}

// The same loop compiled per instruction set, chosen by the CPU's features.
#define IP_HALF_UNIT_ROWS(name, target)                                                         \
  template <typename T>                                                                         \
  target int64_t name(const T* a, int64_t a_cs, int64_t k, const T* b, int64_t b_rs, int64_t n, \
                      float* acc) {                                                             \
    return half_unit_rows(a, a_cs, k, b, b_rs, n, acc);                                         \
  }
IP_HALF_UNIT_ROWS(half_unit_rows_avx512, __attribute__((target("avx512f,avx512bw"))))
IP_HALF_UNIT_ROWS(half_unit_rows_avx2, __attribute__((target("avx2,f16c"))))
IP_HALF_UNIT_ROWS(half_unit_rows_baseline, )
#undef IP_HALF_UNIT_ROWS

template <typename T>
int64_t half_unit_rows_dispatch(const T* a, int64_t a_cs, int64_t k, const T* b, int64_t b_rs,
                                int64_t n, float* acc) {
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx512) return half_unit_rows_avx512(a, a_cs, k, b, b_rs, n, acc);
  if (avx2) return half_unit_rows_avx2(a, a_cs, k, b, b_rs, n, acc);
  return half_unit_rows_baseline(a, a_cs, k, b, b_rs, n, acc);
}

// Outputs from which a half product over unit-stride rows of b streams b row by row
// (gemv_rows) instead of holding blocks of outputs over all of p: a weight stored [in, out]
// read from memory (attention's `w @ v`, 64 or 128 wide and cache-resident, keeps the blocks).
constexpr int64_t kRowsMinCols = 256;

// Half types accumulate in float (opmath); integers in uint64 so overflow wraps like torch.
template <typename T>
void gemm_loop(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, Scalar alpha,
               Scalar beta) {
  using A = std::conditional_t<kIsFloat<T>, float, uint64_t>;
  auto to_acc = [](auto v) -> A {
    if constexpr (kIsFloat<T>)
      return static_cast<A>(static_cast<opmath_t<T>>(v));
    else
      return static_cast<A>(static_cast<int64_t>(v));
  };
  const A al = kIsFloat<T> ? static_cast<A>(alpha.to_double()) : static_cast<A>(alpha.to_int());
  const A be = kIsFloat<T> ? static_cast<A>(beta.to_double()) : static_cast<A>(beta.to_int());
  const bool read_c = beta.to_double() != 0.0;
  std::vector<A> acc(static_cast<size_t>(b.cols));
  // A wide weight stored [in, out] at a half dtype: streamed row by row (gemv_rows.h), a's row
  // widened into x first.
  constexpr bool kHalf = std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;
  const bool by_rows =
      kHalf && b.col_stride == 1 && b.cols >= kRowsMinCols && gemv_rows_vectorized();
  std::vector<float> x(by_rows ? static_cast<size_t>(a.cols) : 0);
  for (int64_t i = 0; i < a.rows; ++i) {
    std::fill(acc.begin(), acc.end(), A(0));
    int64_t j0 = 0;
    if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
      if (by_rows) {
        // gemv_rows' fused multiply-adds round as this loop's multiply and add: the product of
        // two half values is exact.
        for (int64_t p = 0; p < a.cols; ++p)
          x[static_cast<size_t>(p)] =
              static_cast<float>(a.data[i * a.row_stride + p * a.col_stride]);
        gemv_rows_parallel(GemvRowsArgs<T>{x.data(), a.cols, 1, b.data, b.row_stride, b.cols,
                                           a.cols, acc.data(), b.cols});
        j0 = b.cols;
      } else if (b.col_stride == 1)
        j0 = half_unit_rows_dispatch(a.data + i * a.row_stride, a.col_stride, a.cols, b.data,
                                     b.row_stride, b.cols, acc.data());
    } else if (b.col_stride == 1) {
      // Unit-stride rows of b: kBlock outputs at a time held in registers over all of p (the
      // compiler vectorises the block), each still summed over p in order: the same sums.
      constexpr int64_t kBlock = 16;
      for (; j0 + kBlock <= b.cols; j0 += kBlock) {
        A blk[kBlock] = {};
        for (int64_t p = 0; p < a.cols; ++p) {
          const A av = to_acc(a.data[i * a.row_stride + p * a.col_stride]);
          const T* brow = b.data + p * b.row_stride + j0;
          for (int64_t j = 0; j < kBlock; ++j) blk[j] += av * to_acc(brow[j]);
        }
        std::copy(blk, blk + kBlock, acc.begin() + j0);
      }
    }
    for (int64_t p = 0; p < a.cols && j0 < b.cols; ++p) {
      const A av = to_acc(a.data[i * a.row_stride + p * a.col_stride]);
      const T* brow = b.data + p * b.row_stride;
      for (int64_t j = j0; j < b.cols; ++j) acc[j] += av * to_acc(brow[j * b.col_stride]);
    }
    T* crow = c.data + i * c.row_stride;
    for (int64_t j = 0; j < b.cols; ++j) {
      A r = al * acc[j];
      if (read_c) r += be * to_acc(crow[j * c.col_stride]);
      if constexpr (kIsFloat<T>)
        crow[j * c.col_stride] = static_cast<T>(r);
      else
        crow[j * c.col_stride] = static_cast<T>(static_cast<int64_t>(r));
    }
  }
}

#if defined(__SSE2__)
// The eight outputs of gemm_half_bt over p in [0, 8 * floor(k / 8)) for bf16 rows, in vector
// registers: eight rows' 8 x 8 blocks transposed, so that lane l of column q is row l's element
// p + q, widened to float by placing its bits high (a bf16 is a float's upper half). Every lane
// multiplies and adds in the order of the scalar loop, one element of p at a time, so the sums
// are the scalar loop's bit for bit. Returns where the scalar loop continues.
int64_t bf16_dot8(const BFloat16* const* rows, const float* x, int64_t k, float* acc) {
  const __m128i zero = _mm_setzero_si128();
  __m128 lo = _mm_loadu_ps(acc), hi = _mm_loadu_ps(acc + 4);
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    __m128i r[8];
    for (int l = 0; l < 8; ++l)
      r[l] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[l] + p));
    const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
    const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
    const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
    const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
    const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
    const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
    const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
    const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
    const __m128i col[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4),
                            _mm_unpacklo_epi64(b1, b5), _mm_unpackhi_epi64(b1, b5),
                            _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6),
                            _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
    for (int q = 0; q < 8; ++q) {
      const __m128 xv = _mm_set1_ps(x[p + q]);
      lo = _mm_add_ps(lo, _mm_mul_ps(xv, _mm_castsi128_ps(_mm_unpacklo_epi16(zero, col[q]))));
      hi = _mm_add_ps(hi, _mm_mul_ps(xv, _mm_castsi128_ps(_mm_unpackhi_epi16(zero, col[q]))));
    }
  }
  _mm_storeu_ps(acc, lo);
  _mm_storeu_ps(acc + 4, hi);
  return p;
}
#endif

// gemm_loop for a half type when b is a transposed matrix with contiguous columns (b[p][j] =
// W[j][p]: x @ W^T, a linear layer's weight): gemm_loop walks b along p with stride 1 per j only
// through a strided column for every p, a cache miss per element on a weight larger than the
// cache. Here eight outputs at a time read eight rows of W front to back, each output still
// summed over p in order from 0 by the same float multiply and add, so the results are
// gemm_loop's bit for bit (the compiled and the eager paths share this kernel either way).
template <typename T>
void gemm_half_bt(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, Scalar alpha,
                  Scalar beta) {
  constexpr int64_t kLanes = 8;
  const float al = static_cast<float>(alpha.to_double());
  const float be = static_cast<float>(beta.to_double());
  const bool read_c = beta.to_double() != 0.0;
  std::vector<float> av(static_cast<size_t>(a.cols));
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p)
      av[p] = static_cast<float>(a.data[i * a.row_stride + p * a.col_stride]);
    T* crow = c.data + i * c.row_stride;
    for (int64_t j0 = 0; j0 < b.cols; j0 += kLanes) {
      const int64_t lanes = std::min(kLanes, b.cols - j0);
      float acc[kLanes] = {};
      const T* rows[kLanes];
      for (int64_t l = 0; l < kLanes; ++l)
        rows[l] = b.data + (j0 + std::min(l, lanes - 1)) * b.col_stride;
      int64_t p = 0;
#if defined(__SSE2__)
      if constexpr (std::is_same_v<T, BFloat16>) p = bf16_dot8(rows, av.data(), a.cols, acc);
#endif
      for (; p < a.cols; ++p) {
        const float x = av[p];
        for (int64_t l = 0; l < kLanes; ++l) acc[l] += x * static_cast<float>(rows[l][p]);
      }
      for (int64_t l = 0; l < lanes; ++l) {
        float r = al * acc[l];
        if (read_c) r += be * static_cast<float>(crow[(j0 + l) * c.col_stride]);
        crow[(j0 + l) * c.col_stride] = static_cast<T>(r);
      }
    }
  }
}

template <typename T>
void gemm_any(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, Scalar alpha,
              Scalar beta) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    gemm(a, b, c, alpha.to<T>(), beta.to<T>());
  else if constexpr (kIsFloat<T> && std::is_same_v<opmath_t<T>, float>) {
    if (try_gemv_half<T>(a, b, c, static_cast<float>(alpha.to_double()),
                         static_cast<float>(beta.to_double())))
      return;
    b.row_stride == 1 && b.col_stride != 1 ? gemm_half_bt<T>(a, b, c, alpha, beta)
                                           : gemm_loop<T>(a, b, c, alpha, beta);
  } else
    gemm_loop<T>(a, b, c, alpha, beta);
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha, Scalar beta) {
  IP_ASSERT(a.dim() >= 2 && b.dim() >= 2 && out.dim() >= 2, "matmul operands are matrices");
  IP_ASSERT(a.dtype() == b.dtype() && a.dtype() == out.dtype(), "matmul operands share a dtype");
  IP_ASSERT(a.dtype() != DType::kBool, "matmul is not defined for bool");
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  IP_ASSERT(b.size(-2) == k && out.size(-2) == m && out.size(-1) == n, "matmul shapes agree");
  if (out.numel() == 0) return;
  Tensor o = out;
  // BLAS writes rows with unit column stride; any other output layout goes through a temporary.
  if (out.stride(-1) != 1 && n > 1) o = Tensor::empty(out.shape(), out.dtype());
  if (o.data_ptr() != out.data_ptr() && beta.to_double() != 0.0) o.copy_from(out);

  const Shape batch(o.shape().begin(), o.shape().end() - 2);
  const Shape a_bs = batch_strides(a, batch), b_bs = batch_strides(b, batch);
  const Shape o_bs(o.strides().begin(), o.strides().end() - 2);
  const int64_t a_rs = a.stride(-2), a_cs = a.stride(-1), b_rs = b.stride(-2), b_cs = b.stride(-1),
                o_rs = o.stride(-2), o_cs = n == 1 ? 1 : o.stride(-1);

  visit_dtype(a.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* ap = a.data<T>();
      const T* bp = b.data<T>();
      T* op = o.data<T>();
      auto one = [&](int64_t ao, int64_t bo, int64_t oo, int64_t rows, int64_t ars, int64_t ors) {
        gemm_any<T>({ap + ao, rows, k, ars, a_cs}, {bp + bo, k, n, b_rs, b_cs},
                    {op + oo, rows, n, ors, o_cs}, alpha, beta);
      };
      // When b is shared by every batch (x @ W), the batch dims fold into a's rows where a's
      // and out's strides let them: one product. (Folding only the trailing dims b is broadcast
      // over, the query heads of one kv head, made attention's short-k products slower as
      // multi-row GEMVs: measured, not done.)
      bool b_shared = true;
      for (int64_t st : b_bs) b_shared &= st == 0;
      if (b_shared) {
        Shape rows = batch, ast = a_bs, ost = o_bs;
        rows.push_back(m);
        ast.push_back(a_rs);
        ost.push_back(o_rs);
        std::optional<int64_t> fa = flat_stride(rows, ast), fo = flat_stride(rows, ost);
        if (fa && fo) {
          one(0, 0, 0, numel_of(rows), *fa, *fo);
          return;
        }
      }
      // One product per batch index, split over the context's threads when each is large
      // enough to pay for a job (the products write disjoint rows).
      std::vector<std::array<int64_t, 3>> offsets;
      strided_loop<3>(
          batch, {a_bs, b_bs, o_bs},
          [&](const std::array<int64_t, 3>& off, int64_t cnt, const std::array<int64_t, 3>& st) {
            for (int64_t j = 0; j < cnt; ++j)
              offsets.push_back({off[0] + j * st[0], off[1] + j * st[1], off[2] + j * st[2]});
          });
      auto run = [&](int64_t t) {
        const auto& f = offsets[static_cast<size_t>(t)];
        one(f[0], f[1], f[2], m, a_rs, o_rs);
      };
      ThreadPool* pool = current_thread_pool();
      const auto count = static_cast<int64_t>(offsets.size());
      if (pool && pool->threads() > 1 && count > 1 && m * k * n >= (1 << 16))
        pool->parallel_for(count, run);
      else
        for (int64_t t = 0; t < count; ++t) run(t);
    }
  });
  if (o.data_ptr() != out.data_ptr()) out.copy_from(o);
}

}  // namespace inplace::cpu
