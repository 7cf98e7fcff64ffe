// A fused op's cpu kernel as the chain it replaces, run by the chain's own cpu kernels: bitwise
// the result of the unfused steps (each rounds where the chain rounds), which is what a fused op
// at a half dtype promises (upcast_rms_norm, the fused linear family at bf16 / fp16).
#pragma once
#include <mutex>
#include <vector>

#include "backend/kernel_table.h"

namespace inplace::cpu {

// One op of a chain, its declaration and cpu kernel resolved once, at the first call (the table
// is complete by then).
class ChainOp {
 public:
  explicit ChainOp(const char* full_name) : name_(full_name) {}
  // The op on `args` into fresh results (the shapes its declaration gives).
  Tensor operator()(const Args& args) const;
  // The op on `args` into `out` (which may be one of the arguments, for an elementwise op).
  void into(const Args& args, const Tensor& out) const;

 private:
  struct Resolved {
    const OpDef* op;
    const Kernel* kernel;
  };
  const Resolved& resolve() const;
  // `args` bound to the op's schema (its defaults filled in): `args` themselves where they
  // already are, else `*storage`.
  const Args& bind(const Resolved& r, const Args& args, Args* storage) const;
  const char* name_;
  mutable std::once_flag once_;
  mutable Resolved resolved_{};
};

}  // namespace inplace::cpu
