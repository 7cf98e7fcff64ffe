// Scans: cumsum, cumprod and their in-place forms.
#include "kernels/cpu/scan.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// torch's rule: an explicit dtype wins; integral and bool inputs accumulate as int64.
DType scan_dtype(const Tensor& x, const Value& dtype) {
  if (!dtype.is_none()) return dtype.as_dtype("dtype");
  return is_integral(x.dtype(), /*include_bool=*/true) ? DType::kInt64 : x.dtype();
}

void register_scan(Registry& r, const std::string& name, bool prod) {
  const std::string op = name;
  auto infer = [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op.c_str());
    // A 0-d tensor scans as one element: dim may be 0 or -1.
    wrap_dim(a[1].as_int("dim"), std::max<int64_t>(x.dim(), 1), op.c_str());
    return std::vector<Tensor>{Tensor::meta(x.shape(), scan_dtype(x, a[2]))};
  };
  auto out = [op, prod](const Args& a, const std::vector<Tensor>& res) {
    Tensor x = a[0].as_tensor(op.c_str());
    Tensor y = res[0];
    const DType dt = scan_dtype(x, a[2]);
    int64_t dim = wrap_dim(a[1].as_int("dim"), std::max<int64_t>(x.dim(), 1), op.c_str());
    // The kernel widens integers to int64 itself; any other requested dtype converts first.
    if (dt != x.dtype() && !(is_integral(x.dtype(), true) && dt == DType::kInt64)) x = x.to(dt);
    if (x.dim() == 0) {
      x = x.reshape({1});
      y = y.view({1});
    }
    if (prod)
      cpu::cumprod(x, dim, y);
    else
      cpu::cumsum(x, dim, y);
  };
  r.add_out(name + "(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", infer, out);
  r.add_inplace(name + "_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
                name);
}

}  // namespace

void register_scan_ops(Registry& r) {
  register_scan(r, "cumsum", /*prod=*/false);
  register_scan(r, "cumprod", /*prod=*/true);
}

}  // namespace inplace
