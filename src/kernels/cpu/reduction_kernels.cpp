// The cpu kernels of the reductions, registered into the kernel table: sum, mean, var/std,
// amax/amin, max/min, argmax/argmin, softmax/log_softmax. Arguments are decoded by
// ops/reduction_args.h, which the declarations and the CUDA kernels read too.
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/registration.h"
#include "ops/reduction_args.h"

namespace inplace::cpu {

namespace {

using namespace reduction;

constexpr DeviceType kCpu = DeviceType::kCpu;

Kernel sum_kernel(bool has_dim) {
  return [has_dim](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const SumArgs s = sum_args(a, has_dim, "sum");
    const DType dt = sum_dtype(s.self, opt_dtype(s.dtype, "sum"));
    const Reduction red = plan_reduction(s.self, s.dim, s.keepdim, "sum");
    Tensor x = s.self;
    // int -> int64 is the kernel's own widening; any other requested dtype converts first.
    if (dt != x.dtype() && !(is_integral(x.dtype(), true) && dt == DType::kInt64)) x = x.to(dt);
    sum(x, red.mask, out[0]);
  };
}

Kernel mean_kernel(bool has_dim) {
  return [has_dim](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const SumArgs s = sum_args(a, has_dim, "mean");
    const DType dt = mean_dtype(s.self, s.dtype);
    const Reduction red = plan_reduction(s.self, s.dim, s.keepdim, "mean");
    mean(s.self.to(dt), red.mask, out[0]);
  };
}

Kernel var_kernel(const char* name, VarForm form, bool take_sqrt) {
  return [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const VarArgs v = var_args(a, form, name);
    var(v.self, plan_reduction(v.self, v.dim, v.keepdim, name).mask, v.correction, out[0],
        take_sqrt);
  };
}

void register_extremes(KernelTable& t) {
  for (const bool is_max : {true, false}) {
    const char* amax = is_max ? "amax" : "amin";
    t.add(kCpu, amax, [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      extreme(a[0].tensor, amax_plan(a, amax).mask, is_max, out[0], Tensor());
    });
    const char* max = is_max ? "max" : "min";
    // max.other is the elementwise maximum's kernel: only the reductions' overloads here.
    t.add(kCpu, str_cat(max, ".default"),
          [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
            extreme(a[0].tensor, max_all_plan(a[0].tensor, max).mask, is_max, out[0], Tensor());
          });
    t.add(kCpu, str_cat(max, ".dim"),
          [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
            extreme(a[0].tensor, max_dim_plan(a, max).mask, is_max, out[0], out[1]);
          });
    const char* argmax = is_max ? "argmax" : "argmin";
    t.add(kCpu, argmax, [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      extreme(a[0].tensor, argmax_plan(a, argmax).mask, is_max, Tensor(), out[0]);
    });
  }
}

void register_softmax(KernelTable& t) {
  for (const bool log : {false, true}) {
    const char* name = log ? "log_softmax" : "softmax";
    auto kernel = [=](SoftmaxForm form) -> Kernel {
      return [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
        const SoftmaxArgs p = softmax_args(a, form, name);
        softmax(p.self, p.dim, log, out[0]);
      };
    };
    t.add(kCpu, str_cat(name, ".int"), kernel(SoftmaxForm::kInt));
    t.add(kCpu, str_cat(name, ".functional"), kernel(SoftmaxForm::kFunctional));
    t.add(kCpu, str_cat("_", name), kernel(SoftmaxForm::kAten));
  }
}

}  // namespace

void register_reduction_kernels(KernelTable& t) {
  t.add(kCpu, "sum.dim_IntList", sum_kernel(true));
  t.add(kCpu, "sum.default", sum_kernel(false));
  t.add(kCpu, "mean.dim", mean_kernel(true));
  t.add(kCpu, "mean.default", mean_kernel(false));
  for (const bool is_std : {false, true}) {
    const char* name = is_std ? "std" : "var";
    t.add(kCpu, str_cat(name, ".dim"), var_kernel(name, VarForm::kDim, is_std));
    t.add(kCpu, str_cat(name, ".correction"), var_kernel(name, VarForm::kCorrection, is_std));
    t.add(kCpu, str_cat(name, ".default"), var_kernel(name, VarForm::kDefault, is_std));
  }
  register_extremes(t);
  register_softmax(t);
}

}  // namespace inplace::cpu
