// Scans: cumsum, cumprod and their in-place forms. Their arguments are decoded by
// ops/scan_args.h, which the kernels read too.
#include "ops/registry.h"
#include "ops/scan_args.h"

namespace inplace {

namespace {

void register_scan(Registry& r, const std::string& name) {
  const std::string op = name;
  auto infer = [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op.c_str());
    scan::scan_dim(x, a[1], op.c_str());
    return std::vector<Tensor>{Tensor::meta(x.shape(), scan::scan_dtype(x, a[2]))};
  };
  r.add_out(name + "(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", infer, nullptr);
  r.add_inplace(name + "_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
                name);
}

}  // namespace

void register_scan_ops(Registry& r) {
  register_scan(r, "cumsum");
  register_scan(r, "cumprod");
}

}  // namespace inplace
