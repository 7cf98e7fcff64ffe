// The cpu kernels of the creation ops, registered into the kernel table: every fill-shaped
// factory (the rows of ops/creation_args.h), arange, cat, stack, repeat, roll, flip, tril and
// triu. Arguments are decoded by ops/creation_args.h, which the CUDA kernels read too.
#include "kernels/cpu/creation.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/registration.h"
#include "ops/creation_args.h"

namespace inplace::cpu {

namespace {

using namespace creation;

constexpr DeviceType kCpu = DeviceType::kCpu;

Kernel arange_kernel(ArangeForm form) {
  return [form](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    ArangeSpec s = arange_spec(a, form);
    arange(out[0], s.start, s.step);
  };
}

void register_movement(KernelTable& t) {
  t.add(kCpu, "repeat", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    repeat(a[0].as_tensor("repeat"), a[1].as_int_list("repeat"), out[0]);
  });
  t.add(kCpu, "roll", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const Tensor& self = a[0].as_tensor("roll");
    std::vector<int64_t> shifts = a[1].as_int_list("roll");
    std::vector<int64_t> dims = roll_dims(self, shifts, a[2].as_int_list("roll"));
    if (dims.empty()) {
      // torch rolls the flattened tensor and restores the shape.
      roll(self.reshape({-1}), shifts, {0}, out[0].view({-1}));
    } else {
      roll(self, shifts, dims, out[0]);
    }
  });
  t.add(kCpu, "flip", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const Tensor& self = a[0].as_tensor("flip");
    flip(self, flip_dims(self, a[1].as_int_list("flip")), out[0]);
  });
  for (const bool upper : {false, true}) {
    const char* name = upper ? "triu" : "tril";
    t.add(kCpu, name, [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      tril_triu(a[0].as_tensor(name), a[1].as_int(name), upper, out[0]);
    });
  }
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  for (const FilledDecl& d : kFilledOps)
    t.add(kCpu, d.name, [d](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      out[0].fill(filled_value(d, a));
    });
  t.add(kCpu, "arange.default", arange_kernel(ArangeForm::kEnd));
  t.add(kCpu, "arange.start", arange_kernel(ArangeForm::kStart));
  t.add(kCpu, "arange.start_step", arange_kernel(ArangeForm::kStartStep));
  t.add(kCpu, "cat", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    CatSpec s = cat_spec(a);
    cat(s.inputs, s.dim, out[0]);
  });
  t.add(kCpu, "stack", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    CatSpec s = stack_spec(a);
    stack(s.inputs, s.dim, out[0]);
  });
  register_movement(t);
}

}  // namespace inplace::cpu
