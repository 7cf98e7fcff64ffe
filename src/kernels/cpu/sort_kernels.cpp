// The cpu kernels of the sorts (topk, sort, argsort, msort), registered into the kernel table;
// arguments are decoded by ops/sort_args.h.
#include "kernels/cpu/registration.h"
#include "kernels/cpu/sort.h"
#include "ops/sort_args.h"

namespace inplace::cpu {

namespace {

using sorting::sort_dim;
constexpr DeviceType kCpu = DeviceType::kCpu;

// Runs the kernel on views with at least one dim.
void run_sort(const Tensor& x, int64_t dim, int64_t k, bool descending, const Tensor& values,
              const Tensor& indices) {
  if (x.dim() > 0) return sort_lanes(x, dim, k, descending, values, indices);
  auto lift = [](const Tensor& t) { return t.defined() ? t.view({1}) : t; };
  sort_lanes(x.reshape({1}), 0, k, descending, lift(values), lift(indices));
}

// sort / argsort with dim and descending at args[first], args[first + 1].
void run_args(const Args& a, size_t first, const Tensor& values, const Tensor& indices,
              const char* op) {
  const Tensor& x = a[0].as_tensor(op);
  const int64_t dim = sort_dim(x, a[first], op);
  run_sort(x, dim, x.dim() > 0 ? x.size(dim) : 1, a[first + 1].as_bool("descending"), values,
           indices);
}

}  // namespace

void register_sort_kernels(KernelTable& t) {
  t.add(kCpu, "topk", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const sorting::TopkArgs p = sorting::topk_args(a);
    // A 0-d input is copied, even for k=0, as torch does.
    const int64_t k = a[0].tensor.dim() > 0 ? p.k : 1;
    run_sort(a[0].tensor, p.dim, k, a[3].as_bool("largest"), out[0], out[1]);
  });
  t.add(kCpu, "sort.default",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_args(a, 1, out[0], out[1], "sort");
        });
  t.add(kCpu, "sort.stable",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_args(a, 2, out[0], out[1], "sort");
        });
  t.add(kCpu, "argsort.default",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_args(a, 1, Tensor(), out[0], "argsort");
        });
  t.add(kCpu, "argsort.stable",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_args(a, 2, Tensor(), out[0], "argsort");
        });
  t.add(kCpu, "msort", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const Tensor& x = a[0].as_tensor("msort");
    run_sort(x, 0, x.dim() > 0 ? x.size(0) : 1, false, out[0], Tensor());
  });
}

}  // namespace inplace::cpu
