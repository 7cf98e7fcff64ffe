#include "kernels/cpu/chain.h"

#include "core/error.h"

namespace inplace::cpu {

const ChainOp::Resolved& ChainOp::resolve() const {
  std::call_once(once_, [this] {
    const OpDef* op = Registry::get().find(name_);
    IP_CHECK(op != nullptr && op->infer, kInternal, "[", name_, "] is not registered");
    const Kernel* k = KernelTable::get().find(*op, DeviceType::kCpu);
    IP_CHECK(k != nullptr, kInternal, "[", name_, "] has no cpu kernel");
    resolved_ = {op, k};
  });
  return resolved_;
}

// The arguments bound to the op's schema (its defaults filled in), as the engine hands them.
void ChainOp::run(const Resolved& r, const Args& args, const std::vector<Tensor>& out) const {
  if (already_bound(r.op->schema, args)) {
    (*r.kernel)(args, out, KernelContext{});
    return;
  }
  Args bound;
  std::string why;
  IP_CHECK(bind_args(r.op->schema, args, {}, &bound, &why), kInternal, "[", name_, "] ", why);
  (*r.kernel)(bound, out, KernelContext{});
}

Tensor ChainOp::operator()(const Args& args) const {
  const Resolved& r = resolve();
  Args bound;
  const Args* a = &args;
  if (!already_bound(r.op->schema, args)) {
    std::string why;
    IP_CHECK(bind_args(r.op->schema, args, {}, &bound, &why), kInternal, "[", name_, "] ", why);
    a = &bound;
  }
  const std::vector<Tensor> meta = r.op->infer(*a);
  Tensor out = Tensor::empty(meta[0].shape(), meta[0].dtype());
  (*r.kernel)(*a, {out}, KernelContext{});
  return out;
}

void ChainOp::into(const Args& args, const Tensor& out) const {
  run(resolve(), args, {out});
}

}  // namespace inplace::cpu
