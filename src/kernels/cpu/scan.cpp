// cumsum / cumprod. A lane along `dim` is scanned sequentially; when the lanes themselves are
// adjacent in memory (a scan over an outer dim of a row-major tensor) a block of them advances
// together, so each step reads one contiguous row segment instead of striding through memory.
#include <algorithm>
#include <type_traits>

#include "core/strided_loop.h"
#include "kernels/cpu/scan.h"

namespace inplace::cpu {

namespace {

// What torch's CPU kernel accumulates in (at::acc_type<T, /*is_cuda=*/false>); integers use
// uint64 so overflow wraps instead of being undefined.
template <typename Out>
using ScanAcc = std::conditional_t<std::is_same_v<Out, float> || std::is_same_v<Out, double>,
                                   double, std::conditional_t<kIsFloat<Out>, float, uint64_t>>;

template <typename Acc, typename In>
inline Acc load(In v) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<Acc>(static_cast<opmath_t<In>>(v));
}

template <typename Out, typename Acc>
inline Out store(Acc v) {
  if constexpr (std::is_same_v<Out, bool>)
    return v != 0;
  else if constexpr (std::is_same_v<Acc, uint64_t>)
    return static_cast<Out>(static_cast<int64_t>(v));
  else
    return static_cast<Out>(v);
}

constexpr int64_t kLaneBlock = 64;

template <bool kProd, typename In, typename Out>
void scan_typed(const Tensor& in, int64_t dim, const Tensor& out) {
  using Acc = ScanAcc<Out>;
  const Acc init = kProd ? Acc(1) : Acc(0);
  auto step = [](Acc acc, Acc v) { return kProd ? acc * v : acc + v; };
  const In* ip = in.data<In>();
  Out* op = out.data<Out>();
  const int64_t len = in.size(dim), ids = in.stride(dim), ods = out.stride(dim);
  Shape lanes = in.shape();
  lanes[dim] = 1;
  strided_loop<2>(
      lanes, {in.strides(), out.strides()},
      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        if (st[0] == 1 && st[1] == 1 && n > 1) {
          Acc acc[kLaneBlock];
          for (int64_t j0 = 0; j0 < n; j0 += kLaneBlock) {
            const int64_t w = std::min(kLaneBlock, n - j0);
            std::fill(acc, acc + w, init);
            const In* x = ip + off[0] + j0;
            Out* y = op + off[1] + j0;
            for (int64_t i = 0; i < len; ++i, x += ids, y += ods)
              for (int64_t j = 0; j < w; ++j) {
                acc[j] = step(acc[j], load<Acc>(x[j]));
                y[j] = store<Out>(acc[j]);
              }
          }
          return;
        }
        for (int64_t j = 0; j < n; ++j) {
          const In* x = ip + off[0] + j * st[0];
          Out* y = op + off[1] + j * st[1];
          Acc acc = init;
          for (int64_t i = 0; i < len; ++i) {
            acc = step(acc, load<Acc>(x[i * ids]));
            y[i * ods] = store<Out>(acc);
          }
        }
      });
}

template <bool kProd>
void scan(const Tensor& in, int64_t dim, const Tensor& out) {
  IP_ASSERT(in.shape() == out.shape(), "scan output has the input's shape");
  IP_ASSERT(dim >= 0 && dim < in.dim(), "scan dim is wrapped");
  IP_ASSERT(
      in.dtype() == out.dtype() || (is_integral(in.dtype(), true) && out.dtype() == DType::kInt64),
      "scan output dtype is the input's or int64 for integral input");
  if (in.numel() == 0) return;
  visit_dtype(in.dtype(), [&]<typename In>() {
    if (out.dtype() == in.dtype())
      scan_typed<kProd, In, In>(in, dim, out);
    else if constexpr (!kIsFloat<In>)
      scan_typed<kProd, In, int64_t>(in, dim, out);
  });
}

}  // namespace

void cumsum(const Tensor& in, int64_t dim, const Tensor& out) {
  scan<false>(in, dim, out);
}
void cumprod(const Tensor& in, int64_t dim, const Tensor& out) {
  scan<true>(in, dim, out);
}

}  // namespace inplace::cpu
