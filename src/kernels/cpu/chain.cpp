#include "kernels/cpu/chain.h"

#include "core/error.h"

namespace inplace::cpu {

ChainOp::Resolved ChainOp::resolve() const {
  const OpDef* op = Registry::get().find(name_);
  IP_CHECK(op != nullptr && op->infer, kInternal, "[", name_, "] is not registered");
  const Kernel* k = KernelTable::get().find(*op, DeviceType::kCpu);
  IP_CHECK(k != nullptr, kInternal, "[", name_, "] has no cpu kernel");
  return {op, k};
}

// The arguments bound to the op's schema (its defaults filled in), as the engine hands them.
Args ChainOp::bound(const Resolved& r, const Args& args) const {
  Args out;
  std::string why;
  IP_CHECK(bind_args(r.op->schema, args, {}, &out, &why), kInternal, "[", name_, "] ", why);
  return out;
}

Tensor ChainOp::operator()(const Args& args) const {
  const Resolved r = resolve();
  const Args a = bound(r, args);
  const std::vector<Tensor> meta = r.op->infer(a);
  Tensor out = Tensor::empty(meta[0].shape(), meta[0].dtype());
  (*r.kernel)(a, {out}, KernelContext{});
  return out;
}

void ChainOp::into(const Args& args, const Tensor& out) const {
  const Resolved r = resolve();
  (*r.kernel)(bound(r, args), {out}, KernelContext{});
}

}  // namespace inplace::cpu
