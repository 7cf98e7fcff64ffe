// The cpu kernels of the scans (cumsum, cumprod), registered into the kernel table; arguments
// are decoded by ops/scan_args.h.
#include "kernels/cpu/registration.h"
#include "kernels/cpu/scan.h"
#include "ops/scan_args.h"

namespace inplace::cpu {

void register_scan_kernels(KernelTable& t) {
  for (const bool prod : {false, true}) {
    const char* op = prod ? "cumprod" : "cumsum";
    t.add(DeviceType::kCpu, op,
          [=](const Args& a, const std::vector<Tensor>& res, const KernelContext&) {
            Tensor x = a[0].as_tensor(op);
            Tensor y = res[0];
            const DType dt = scan::scan_dtype(x, a[2]);
            int64_t dim = scan::scan_dim(x, a[1], op);
            // The kernel widens integers to int64 itself; any other requested dtype converts
            // first.
            if (dt != x.dtype() && !(is_integral(x.dtype(), true) && dt == DType::kInt64))
              x = x.to(dt);
            if (x.dim() == 0) {
              x = x.reshape({1});
              y = y.view({1});
            }
            if (prod)
              cumprod(x, dim, y);
            else
              cumsum(x, dim, y);
          });
  }
}

}  // namespace inplace::cpu
