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

const Args& ChainOp::bind(const Resolved& r, const Args& args, Args* storage) const {
  if (already_bound(r.op->schema, args)) return args;
  std::string why;
  IP_CHECK(bind_args(r.op->schema, args, {}, storage, &why), kInternal, "[", name_, "] ", why);
  return *storage;
}

Tensor ChainOp::operator()(const Args& args) const {
  const Resolved& r = resolve();
  Args storage;
  const Args& a = bind(r, args, &storage);
  const std::vector<Tensor> meta = r.op->infer(a);
  Tensor out = Tensor::empty(meta[0].shape(), meta[0].dtype());
  (*r.kernel)(a, {out}, KernelContext{});
  return out;
}

void ChainOp::into(const Args& args, const Tensor& out) const {
  const Resolved& r = resolve();
  Args storage;
  (*r.kernel)(bind(r, args, &storage), {out}, KernelContext{});
}

}  // namespace inplace::cpu
