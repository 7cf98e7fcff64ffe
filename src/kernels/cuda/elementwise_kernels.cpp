// CUDA kernels of the elementwise ops: arithmetic, unary math, comparisons, where, masked_fill,
// copies, casts and fills. Arguments are decoded and ops numbered by the neutral headers the cpu
// kernels read too (ops/elementwise_args.h, ops/elementwise_codes.h); the result dtype was fixed
// by the op's shape rule when the plan was built.
#include <array>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "ops/elementwise_args.h"

namespace inplace::cuda {

namespace {

Operand at(const elementwise::Operand& o, const Shape& shape) {
  return o.is_tensor() ? operand(o.tensor, shape) : number(o.scalar);
}
Operand at(const Value& v, const Shape& shape, const char* op) {
  return at(elementwise::operand(v, op), shape);
}

// A binary op over its declared operands (ops/elementwise_codes.h kBinaryOps).
Kernel binary_kernel(const BinaryDecl& d) {
  const char* op = d.name;
  return [d, op](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Shape& shape = outs[0].shape();
    const BinaryOp k = d.mode >= 0 ? elementwise::div_mode(args, d.mode) : d.op;
    binary(static_cast<int>(k), operand(outs[0]), at(args[d.a], shape, op),
           at(args[d.b], shape, op),
           d.alpha >= 0 ? args[d.alpha].as_scalar(op) : Scalar(int64_t{1}), ctx.queue);
  };
}

// Steps of one binary op in one launch (launch groups' batches), each as binary_kernel runs it.
static_assert(kMaxBatch <= kMaxBinaryBatch, "a batch of steps fits one binary batch");
BatchKernel binary_batch_kernel(const BinaryDecl& d) {
  const char* op = d.name;
  return [d, op](const StepCall* calls, int n) {
    std::array<BinaryTask, kMaxBinaryBatch> tasks;
    int count = 0;
    for (int c = 0; c < n; ++c) {
      const Args& args = *calls[c].args;
      const Tensor& out = (*calls[c].outs)[0];
      if (out.numel() == 0) continue;
      BinaryTask& t = tasks[count++];
      t.op = static_cast<int>(d.mode >= 0 ? elementwise::div_mode(args, d.mode) : d.op);
      t.out = operand(out);
      t.a = at(args[d.a], out.shape(), op);
      t.b = at(args[d.b], out.shape(), op);
      const Scalar alpha = d.alpha >= 0 ? args[d.alpha].as_scalar(op) : Scalar(int64_t{1});
      if (is_floating(out.dtype()))
        t.alpha_f = alpha.to_double();
      else
        t.alpha_i = alpha.to_int();
    }
    if (count) binary_batch(tasks.data(), count, calls[0].ctx.queue);
  };
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::kBitwiseAnd || op == BinaryOp::kBitwiseOr || op == BinaryOp::kBitwiseXor;
}

void register_binary(KernelTable& t) {
  for (const BinaryDecl& d : kBinaryOps)
    if (!is_bitwise(d.op)) {  // TODO: bitwise
      t.add(DeviceType::kCuda, d.name, binary_kernel(d));
      LaunchKernels::get().add_batch(d.name, binary_batch_kernel(d));
    }
}

void register_unary(KernelTable& t) {
  for (const UnaryDecl& d : kUnaryOps) {
    const UnaryOp kind = d.op;
    t.add(DeviceType::kCuda, d.name,
          [kind](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
            unary(static_cast<int>(kind), operand(outs[0]),
                  operand(args[0].tensor, outs[0].shape()), ctx.queue);
          });
  }
  t.add(DeviceType::kCuda, "gelu",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          unary(static_cast<int>(elementwise::gelu_kind(args[1])), operand(outs[0]),
                operand(args[0].tensor), ctx.queue);
        });
}

void register_compare(KernelTable& t) {
  for (const CompareDecl& d : kCompareOps) {
    const CompareOp kind = d.op;
    const char* name = d.name;
    t.add(
        DeviceType::kCuda, name,
        [kind, name](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const elementwise::Operand a = elementwise::operand(args[0], name);
          const elementwise::Operand b = elementwise::operand(args[1], name);
          const Shape& shape = outs[0].shape();
          compare(static_cast<int>(kind), operand(outs[0]), at(a, shape), at(b, shape),
                  elementwise::result_type({&a, &b}), ctx.queue);
        });
  }
}

// clamp: max with the lower bound, then min with the upper one (NaN propagates through both,
// and a lower bound above the upper gives the upper, as torch).
Kernel clamp_kernel(int lo, int hi) {
  return [=](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Shape& shape = outs[0].shape();
    const Operand out = operand(outs[0]);
    Operand self = at(args[0], shape, "clamp");
    const bool has_lo = lo >= 0 && !args[lo].is_none(), has_hi = hi >= 0 && !args[hi].is_none();
    if (!has_lo && !has_hi) return copy_cast(out, self, ctx.queue);
    const Scalar one(int64_t{1});
    if (has_lo) {
      binary(static_cast<int>(BinaryOp::kMaximum), out, self, at(args[lo], shape, "clamp"), one,
             ctx.queue);
      self = out;
    }
    if (has_hi)
      binary(static_cast<int>(BinaryOp::kMinimum), out, self, at(args[hi], shape, "clamp"), one,
             ctx.queue);
  };
}

void register_select_and_copy(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  for (const ClampDecl& d : kClampOps) t.add(C, d.name, clamp_kernel(d.lo, d.hi));
  t.add(C, "where",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const Shape& shape = outs[0].shape();
          where(operand(outs[0]), operand(args[0].tensor, shape), at(args[1], shape, "where"),
                at(args[2], shape, "where"), ctx.queue);
        });
  t.add(C, "masked_fill",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const Shape& shape = outs[0].shape();
          where(operand(outs[0]), operand(args[1].tensor, shape), at(args[2], shape, "masked_fill"),
                operand(args[0].tensor, shape), ctx.queue);
        });
  // out = the first argument, cast to out's dtype (clone, _to_copy, lift_fresh_copy). Nothing
  // to do when the engine placed the result on the argument itself (a mutated cache's write-back
  // `k_modified = k.to(...)` over the same memory): a whole-cache copy per step otherwise.
  const Kernel copy_first = [](const Args& args, const std::vector<Tensor>& outs,
                               const KernelContext& ctx) {
    if (args[0].tensor.same_view(outs[0])) return;
    copy_cast(operand(outs[0]), operand(args[0].tensor, outs[0].shape()), ctx.queue);
  };
  for (const char* name : {"clone", "lift_fresh_copy", "_to_copy"}) t.add(C, name, copy_first);
  // The casts the cpu runs eagerly (a view when nothing changes, which the plan makes a view;
  // a step only when they convert or gather): the same copy into the planned result.
  for (const char* name : {"to", "type", "type_as", "contiguous", "float", "double", "half",
                           "bfloat16", "long", "int", "short", "char", "byte", "bool"})
    t.add(C, name, copy_first);
  // reshape's copy (when no view has the new shape): the elements in row-major order.
  const Kernel reshape_copy = [](const Args& args, const std::vector<Tensor>& outs,
                                 const KernelContext& ctx) {
    const Tensor& src = args[0].tensor;
    copy_cast(operand(outs[0].view(src.shape())), operand(src), ctx.queue);
  };
  for (const char* name : {"reshape", "reshape_as"}) t.add(C, name, reshape_copy);
  // copy(self, src): src broadcast to self's shape, cast to self's dtype.
  t.add(C, "copy", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    if (args[1].is_tensor() && args[1].tensor.same_view(outs[0])) return;
    copy_cast(operand(outs[0]), at(args[1], outs[0].shape(), "copy"), ctx.queue);
  });
  t.add(C, "fill", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    copy_cast(operand(outs[0]), at(args[1], outs[0].shape(), "fill"), ctx.queue);
  });
  t.add(C, "zero", [](const Args&, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    fill(operand(outs[0]), Scalar(int64_t{0}), ctx.queue);
  });
  t.add_copy(C, [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Tensor& src = args[0].tensor;
    if (src.same_view(outs[0])) return;
    IP_CHECK(!src.may_overlap(outs[0]), kUnsupported,
             "[cuda] copy between overlapping views is not supported");
    copy_cast(operand(outs[0]), operand(src, outs[0].shape()), ctx.queue);
  });
}

}  // namespace

void register_elementwise_kernels(KernelTable& table) {
  register_binary(table);
  register_unary(table);
  register_compare(table);
  register_select_and_copy(table);
}

}  // namespace inplace::cuda
