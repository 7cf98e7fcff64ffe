// CUDA kernels of the elementwise ops: arithmetic, unary math, comparisons, where, masked_fill,
// copies, casts and fills. Arguments are read as the ops' own out kernels read them; the result
// dtype was fixed by the op's shape rule when the plan was built.
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"
#include "ops/elementwise_ops.h"

namespace inplace::cuda {

namespace {

using cpu::BinaryOp;
using cpu::CompareOp;
using cpu::UnaryOp;

Operand at(const cpu::Operand& o, const Shape& shape) {
  return o.is_tensor() ? operand(o.tensor, shape) : number(o.scalar);
}
Operand at(const Value& v, const Shape& shape, const char* op) {
  return at(elementwise::operand(v, op), shape);
}

static_assert(static_cast<int>(BinaryOp::kBitwiseXor) == 13, "cuda binary_op numbers ops");
static_assert(static_cast<int>(UnaryOp::kLogicalNot) == 25, "cuda unary_op numbers ops");
static_assert(static_cast<int>(CompareOp::kXor) == 8, "cuda compare_op numbers ops");

// A binary op over args[ia], args[ib]; alpha from args[alpha] when >= 0; the division mode
// from args[mode] when >= 0.
Kernel binary_kernel(const char* op, BinaryOp kind, int ia, int ib, int alpha = -1, int mode = -1) {
  return [=](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Shape& shape = outs[0].shape();
    BinaryOp k = kind;
    if (mode >= 0 && !args[mode].is_none()) {
      const std::string& m = args[mode].as_string(op);
      k = m == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor;
    }
    binary(static_cast<int>(k), operand(outs[0]), at(args[ia], shape, op), at(args[ib], shape, op),
           alpha >= 0 ? args[alpha].as_scalar(op) : Scalar(int64_t{1}), ctx.stream);
  };
}

void register_binary(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  for (const char* ov : {"add.Tensor", "add.Scalar"})
    t.add(C, ov, binary_kernel("add", BinaryOp::kAdd, 0, 1, 2));
  for (const char* ov : {"sub.Tensor", "sub.Scalar"})
    t.add(C, ov, binary_kernel("sub", BinaryOp::kSub, 0, 1, 2));
  for (const char* ov : {"rsub.Tensor", "rsub.Scalar"})
    t.add(C, ov, binary_kernel("rsub", BinaryOp::kSub, 1, 0, 2));
  t.add(C, "mul", binary_kernel("mul", BinaryOp::kMul, 0, 1));
  for (const char* ov : {"div.Tensor", "div.Scalar"})
    t.add(C, ov, binary_kernel("div", BinaryOp::kDiv, 0, 1));
  for (const char* ov : {"div.Tensor_mode", "div.Scalar_mode"})
    t.add(C, ov, binary_kernel("div", BinaryOp::kDiv, 0, 1, -1, 2));
  t.add(C, "__rtruediv__", binary_kernel("div", BinaryOp::kDiv, 1, 0));
  t.add(C, "floor_divide", binary_kernel("floor_divide", BinaryOp::kDivFloor, 0, 1));
  t.add(C, "__rfloordiv__", binary_kernel("floor_divide", BinaryOp::kDivFloor, 1, 0));
  t.add(C, "remainder", binary_kernel("remainder", BinaryOp::kRemainder, 0, 1));
  t.add(C, "__rmod__", binary_kernel("remainder", BinaryOp::kRemainder, 1, 0));
  t.add(C, "fmod", binary_kernel("fmod", BinaryOp::kFmod, 0, 1));
  t.add(C, "pow", binary_kernel("pow", BinaryOp::kPow, 0, 1));
  t.add(C, "__rpow__", binary_kernel("pow", BinaryOp::kPow, 1, 0));
  t.add(C, "maximum", binary_kernel("maximum", BinaryOp::kMaximum, 0, 1));
  t.add(C, "minimum", binary_kernel("minimum", BinaryOp::kMinimum, 0, 1));
}

void register_unary(KernelTable& t) {
  const std::pair<const char*, UnaryOp> kOps[] = {
      {"neg", UnaryOp::kNeg},
      {"abs", UnaryOp::kAbs},
      {"relu", UnaryOp::kRelu},
      {"sqrt", UnaryOp::kSqrt},
      {"rsqrt", UnaryOp::kRsqrt},
      {"exp", UnaryOp::kExp},
      {"log", UnaryOp::kLog},
      {"log2", UnaryOp::kLog2},
      {"log1p", UnaryOp::kLog1p},
      {"expm1", UnaryOp::kExpm1},
      {"sin", UnaryOp::kSin},
      {"cos", UnaryOp::kCos},
      {"tan", UnaryOp::kTan},
      {"tanh", UnaryOp::kTanh},
      {"erf", UnaryOp::kErf},
      {"sigmoid", UnaryOp::kSigmoid},
      {"reciprocal", UnaryOp::kReciprocal},
      {"silu", UnaryOp::kSilu},
      {"floor", UnaryOp::kFloor},
      {"ceil", UnaryOp::kCeil},
      {"round", UnaryOp::kRound},
      {"trunc", UnaryOp::kTrunc},
      {"bitwise_not", UnaryOp::kBitwiseNot},
      {"logical_not", UnaryOp::kLogicalNot},
  };
  for (const auto& [name, kind] : kOps)
    t.add(DeviceType::kCuda, name,
          [kind](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
            unary(static_cast<int>(kind), operand(outs[0]),
                  operand(args[0].tensor, outs[0].shape()), ctx.stream);
          });
  t.add(DeviceType::kCuda, "gelu",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const bool tanh = args[1].as_string("gelu") == "tanh";
          unary(static_cast<int>(tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu), operand(outs[0]),
                operand(args[0].tensor), ctx.stream);
        });
}

void register_compare(KernelTable& t) {
  const std::pair<const char*, CompareOp> kOps[] = {
      {"eq", CompareOp::kEq},           {"ne", CompareOp::kNe},
      {"lt", CompareOp::kLt},           {"le", CompareOp::kLe},
      {"gt", CompareOp::kGt},           {"ge", CompareOp::kGe},
      {"logical_and", CompareOp::kAnd}, {"logical_or", CompareOp::kOr},
      {"logical_xor", CompareOp::kXor}};
  for (const auto& [name, kind] : kOps)
    t.add(
        DeviceType::kCuda, name,
        [kind, name](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const cpu::Operand a = elementwise::operand(args[0], name);
          const cpu::Operand b = elementwise::operand(args[1], name);
          const Shape& shape = outs[0].shape();
          compare(static_cast<int>(kind), operand(outs[0]), at(a, shape), at(b, shape),
                  elementwise::result_type({&a, &b}), ctx.stream);
        });
}

// clamp: max with the lower bound, then min with the upper one (NaN propagates through both,
// and a lower bound above the upper gives the upper, as torch).
Kernel clamp_kernel(int lo, int hi) {
  return [=](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Shape& shape = outs[0].shape();
    const Operand out = operand(outs[0]);
    Operand self = at(args[0], shape, "clamp");
    const bool has_lo = lo >= 0 && !args[lo].is_none(), has_hi = hi >= 0 && !args[hi].is_none();
    if (!has_lo && !has_hi) return copy_cast(out, self, ctx.stream);
    const Scalar one(int64_t{1});
    if (has_lo) {
      binary(static_cast<int>(BinaryOp::kMaximum), out, self, at(args[lo], shape, "clamp"), one,
             ctx.stream);
      self = out;
    }
    if (has_hi)
      binary(static_cast<int>(BinaryOp::kMinimum), out, self, at(args[hi], shape, "clamp"), one,
             ctx.stream);
  };
}

void register_select_and_copy(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  t.add(C, "clamp", clamp_kernel(1, 2));
  t.add(C, "clamp_min", clamp_kernel(1, -1));
  t.add(C, "clamp_max", clamp_kernel(-1, 1));
  t.add(C, "where",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const Shape& shape = outs[0].shape();
          where(operand(outs[0]), operand(args[0].tensor, shape), at(args[1], shape, "where"),
                at(args[2], shape, "where"), ctx.stream);
        });
  t.add(C, "masked_fill",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          const Shape& shape = outs[0].shape();
          where(operand(outs[0]), operand(args[1].tensor, shape), at(args[2], shape, "masked_fill"),
                operand(args[0].tensor, shape), ctx.stream);
        });
  // out = the first argument, cast to out's dtype (clone, _to_copy, lift_fresh_copy). Nothing
  // to do when the engine placed the result on the argument itself (a mutated cache's write-back
  // `k_modified = k.to(...)` over the same memory): a whole-cache copy per step otherwise.
  const Kernel copy_first = [](const Args& args, const std::vector<Tensor>& outs,
                               const KernelContext& ctx) {
    if (args[0].tensor.same_view(outs[0])) return;
    copy_cast(operand(outs[0]), operand(args[0].tensor, outs[0].shape()), ctx.stream);
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
    copy_cast(operand(outs[0].view(src.shape())), operand(src), ctx.stream);
  };
  for (const char* name : {"reshape", "reshape_as"}) t.add(C, name, reshape_copy);
  // copy(self, src): src broadcast to self's shape, cast to self's dtype.
  t.add(C, "copy", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    if (args[1].is_tensor() && args[1].tensor.same_view(outs[0])) return;
    copy_cast(operand(outs[0]), at(args[1], outs[0].shape(), "copy"), ctx.stream);
  });
  t.add(C, "fill", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    copy_cast(operand(outs[0]), at(args[1], outs[0].shape(), "fill"), ctx.stream);
  });
  t.add(C, "zero", [](const Args&, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    fill(operand(outs[0]), Scalar(int64_t{0}), ctx.stream);
  });
  t.add_copy(C, [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Tensor& src = args[0].tensor;
    if (src.same_view(outs[0])) return;
    IP_CHECK(!src.may_overlap(outs[0]), kUnsupported,
             "[cuda] copy between overlapping views is not supported");
    copy_cast(operand(outs[0]), operand(src, outs[0].shape()), ctx.stream);
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
