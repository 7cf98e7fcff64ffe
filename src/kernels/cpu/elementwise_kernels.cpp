// The cpu kernels of the elementwise ops, registered into the kernel table: arithmetic, unary
// math, comparisons, where, clamp, masked_fill, copies, casts and fills. Arguments are decoded
// by the neutral headers the CUDA kernels read too (ops/elementwise_args.h) and the op codes are
// the rows of ops/elementwise_codes.h; the result dtype was fixed by the op's shape rule.
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

namespace {

using elementwise::operand;

constexpr DeviceType kCpu = DeviceType::kCpu;

// A binary op over its declared operands. pow keeps torch's fast paths: a number exponent
// (pow_scalar), and 1 ** x (a fill).
Kernel binary_kernel(const BinaryDecl& d) {
  return [d](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
    const Operand a = operand(args[d.a], d.op_name), b = operand(args[d.b], d.op_name);
    const Tensor& out = outs[0];
    if (d.op == BinaryOp::kPow) {
      if (a.is_tensor() && !b.is_tensor()) return pow_scalar(out, a.tensor, b.scalar);
      if (!a.is_tensor() && a.scalar.to_double() == 1.0) return fill(out, Scalar(1));
    }
    const BinaryOp kind = d.mode >= 0 ? elementwise::div_mode(args, d.mode) : d.op;
    binary(kind, out, a, b, d.alpha >= 0 ? args[d.alpha].as_scalar(d.op_name) : Scalar(1),
           d.op_name);
  };
}

void register_binary(KernelTable& t) {
  for (const BinaryDecl& d : kBinaryOps) t.add(kCpu, d.name, binary_kernel(d));
  // square(x) = x ** 2
  t.add(kCpu, "square",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
          pow_scalar(outs[0], args[0].as_tensor("square"), Scalar(2));
        });
}

void register_unary(KernelTable& t) {
  // Every overload of the name: name.nn_functional too (its inplace flag is read eagerly only).
  for (const UnaryDecl& d : kUnaryOps) {
    const UnaryOp kind = d.op;
    const char* name = d.name;
    t.add(kCpu, name,
          [kind, name](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
            unary(kind, outs[0], args[0].as_tensor(name));
          });
  }
  t.add(kCpu, "gelu", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
    unary(elementwise::gelu_kind(args[1]), outs[0], args[0].as_tensor("gelu"));
  });
}

void register_compare(KernelTable& t) {
  for (const CompareDecl& d : kCompareOps) {
    const CompareOp kind = d.op;
    const char* name = d.name;
    t.add(kCpu, name,
          [kind, name](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
            const Operand a = operand(args[0], name), b = operand(args[1], name);
            compare(kind, outs[0], a, b, elementwise::result_type({&a, &b}));
          });
  }
}

void register_select(KernelTable& t) {
  t.add(kCpu, "where", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
    where(outs[0], args[0].as_tensor("where"), operand(args[1], "where"),
          operand(args[2], "where"));
  });
  for (const ClampDecl& d : kClampOps) {
    const ClampDecl decl = d;
    t.add(kCpu, d.name,
          [decl](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
            const elementwise::ClampArgs c =
                elementwise::clamp_args(args, decl.name, decl.lo, decl.hi);
            clamp(outs[0], c.self, c.lo, c.hi);
          });
  }
  t.add(kCpu, "masked_fill",
        [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
          where(outs[0], args[1].as_tensor("masked_fill"), operand(args[2], "masked_fill"),
                Operand(args[0].as_tensor("masked_fill")));
        });
}

// dst <- src: a tensor broadcast and cast, or a number filled.
void copy_into(const Tensor& dst, const Value& src) {
  if (src.is_tensor())
    copy_cast(dst, src.tensor);
  else
    fill(dst, src.as_scalar("copy"));
}

void register_copy(KernelTable& t) {
  const Kernel copy_first = [](const Args& args, const std::vector<Tensor>& outs,
                               const KernelContext&) { copy_cast(outs[0], args[0].tensor); };
  for (const char* name : {"_to_copy", "clone", "lift_fresh_copy"}) t.add(kCpu, name, copy_first);
  t.add(kCpu, "copy", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
    copy_into(outs[0], args[1]);
  });
  t.add(kCpu, "fill", [](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
    fill(outs[0], args[1].as_scalar("fill"));
  });
  t.add(kCpu, "zero", [](const Args&, const std::vector<Tensor>& outs, const KernelContext&) {
    fill(outs[0], Scalar(0));
  });

  // The direct writes (no result to plan): copy_ / fill_ / zero_.
  t.add_eager(kCpu, "copy_", [](const Args& a) {
    const Tensor& self = a[0].as_tensor("copy_");
    elementwise::check_copy_src(self, a[1], "copy_");
    copy_into(self, a[1]);
    return a[0];
  });
  t.add_eager(kCpu, "fill_", [](const Args& a) {
    fill(a[0].as_tensor("fill_"), elementwise::fill_value(a[1], "fill_").as_scalar("fill_"));
    return a[0];
  });
  t.add_eager(kCpu, "zero_", [](const Args& a) {
    fill(a[0].as_tensor("zero_"), Scalar(0));
    return a[0];
  });
}

}  // namespace

void register_elementwise_kernels(KernelTable& table) {
  register_binary(table);
  register_unary(table);
  register_compare(table);
  register_select(table);
  register_copy(table);
}

}  // namespace inplace::cpu
