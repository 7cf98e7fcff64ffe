// The CUDA kernels of fused_pointwise and fused_rows: the program decoded and checked on the host
// (as the cpu kernels do, ops/fused_pointwise_args.h), then one launch (fused_pointwise.cu). Its
// supports refuses the programs whose result could differ from the unfused CUDA kernels' (so the
// fuse_pointwise pass leaves those chains unfused for cuda, and no fused step reaches the host).
#include <cmath>

#include "kernels/cuda/fused_pointwise.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"

namespace inplace::cuda {

namespace {

using pointwise::Opcode;

constexpr const char* kOp = "fused_pointwise";

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

// Whether a cast from `s` to `t` (copy_cast, as the kernel's kCast computes it) gives what an
// unfused kernel computing at t loads from an `s` operand without a cast (load_at in t's compute
// type, not rounded to t): the same instruction stands for both, an explicit `.to(t)` and an
// operand's implicit conversion, and the program cannot tell them apart.
bool cast_is_operand_load(DType s, DType t) {
  if (s == t || s == DType::kBool || t == DType::kBool) return true;  // != 0 either way
  switch (t) {
    case DType::kFloat64:
    case DType::kFloat32:  // copy_cast converts an integer to float32 directly, as load_at does
    case DType::kInt64:    // float to int64 truncates alike through float or double
      return true;
    case DType::kFloat16:
    case DType::kBFloat16:  // exact for 8-bit integers only; load_at never rounds to the dtype
      return s == DType::kUInt8 || s == DType::kInt8;
    case DType::kInt32:
      return s == DType::kInt16 || s == DType::kInt8 || s == DType::kUInt8;
    case DType::kInt16:
      return s == DType::kInt8 || s == DType::kUInt8;
    default:  // int8, uint8: load_at in int64 does not wrap
      return false;
  }
}

}  // namespace

std::string fused_pointwise_refusal(const pointwise::Program& p,
                                    const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.dim() > kMaxDims)
      return str_cat("an input of ", t.dim(), " dims (the kernel takes at most ", kMaxDims, ")");
  // Whether each register depends on 0-dim tensors only: such an operand does not take part in
  // type promotion, so an op may narrow it implicitly (a float32 0-dim tensor times a bfloat16
  // one is bfloat16), which its unfused kernel does without rounding.
  std::vector<bool> zero_dim(p.code.size(), true);
  std::vector<bool> number(p.code.size(), false);
  for (size_t i = 0; i < p.code.size(); ++i) {
    const pointwise::Instr& in = p.code[i];
    const DType t = static_cast<DType>(in.dtype);
    auto operand = [&](int32_t r) { zero_dim[i] = zero_dim[i] && zero_dim[r]; };
    auto why = [&](const std::string& what) { return str_cat("instruction ", i, ": ", what); };
    switch (in.op) {
      case Opcode::kLoad:
        zero_dim[i] = inputs[in.a].dim() == 0;
        break;
      case Opcode::kConst: {
        number[i] = true;
        // A bool number is its int64 on the device (where, arithmetic), a double tested for
        // != 0 in the unfused logical ops: they differ on a NaN and on a fraction below 1.
        const double v = pointwise::number_of(in.a & 3, in.b, in.c).to_double();
        if (t == DType::kBool && (std::isnan(v) || (v != 0 && std::fabs(v) < 1)))
          return why(str_cat("the number ", v, " as a bool"));
        break;
      }
      case Opcode::kCast: {
        const DType s = p.reg[in.a];
        operand(in.a);
        if (number[in.a]) return why("a cast of a number");
        // An op converts its operand implicitly only to a dtype that promotion reaches: from
        // an integer to a float from any tensor, within a category from a 0-dim one only.
        const bool implicit_possible = is_float(s) == is_float(t) ? zero_dim[in.a] : is_float(t);
        if (!cast_is_operand_load(s, t) && implicit_possible)
          return why(str_cat("a cast of ", dtype_name(s), " to ", dtype_name(t),
                             " may be an operand's implicit conversion, which the unfused CUDA "
                             "kernels do not round to ",
                             dtype_name(t)));
        break;
      }
      case Opcode::kUnary:
      case Opcode::kPowScalar:
      case Opcode::kStore:
      case Opcode::kReduce:
        if (number[in.a]) return why("a number where the kernel takes a tensor");
        operand(in.a);
        break;
      case Opcode::kBinary:
      case Opcode::kCompare:
        operand(in.a);
        operand(in.b);
        break;
      case Opcode::kWhere:
        if (number[in.a]) return why("a number as where's condition");
        operand(in.a);
        operand(in.b);
        operand(in.c);
        break;
    }
  }
  return "";
}

namespace {

constexpr const char* kRowsOp = "fused_rows";

// `rows`: a fused_rows program (with row reductions).
pointwise::Program program_of(const Args& args, std::vector<Tensor>* inputs, bool rows = false) {
  const char* op = rows ? kRowsOp : kOp;
  std::vector<DType> dtypes;
  for (const Value& v : args[0].items) {
    inputs->push_back(v.as_tensor(op));
    dtypes.push_back(inputs->back().dtype());
  }
  return pointwise::decode(args[1].as_int_list(op), dtypes, rows);
}

// The kernel's arguments for one step: its program decoded and checked on the host.
FusedPointwise fused_of(const Args& args, const std::vector<Tensor>& outs, bool rows = false) {
  std::vector<Tensor> inputs;
  const pointwise::Program prog = program_of(args, &inputs, rows);
  const std::string why = fused_pointwise_refusal(prog, inputs);
  IP_CHECK(why.empty(), kUnsupported, "[", rows ? kRowsOp : kOp, "] the cuda kernel does not run ",
           why);
  FusedPointwise p;
  p.n_code = static_cast<int>(prog.code.size());
  for (int k = 0; k < p.n_code; ++k) {
    p.code[k] = prog.code[k];
    p.reg[k] = static_cast<uint8_t>(prog.reg[k]);
  }
  for (size_t k = 0; k < inputs.size(); ++k) p.inputs[k] = operand(inputs[k], outs[0].shape());
  p.out = operand(outs[0]);
  return p;
}

}  // namespace

void register_fused_pointwise_kernels(KernelTable& table) {
  auto supports = [](bool rows) -> Supports {
    return [rows](const Args& args) {
      std::vector<Tensor> inputs;
      try {
        return fused_pointwise_refusal(program_of(args, &inputs, rows), inputs);
      } catch (const Error& e) {
        return std::string(e.what());
      }
    };
  };
  table.add(
      DeviceType::kCuda, kOp,
      [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
        fused_pointwise(fused_of(args, outs), ctx.queue);
      },
      supports(false));
  table.add(
      DeviceType::kCuda, kRowsOp,
      [](const Args& args, const std::vector<Tensor>& outs, const KernelContext& ctx) {
        const Tensor& out = outs[0];
        if (out.numel() == 0) return;
        fused_rows(fused_of(args, outs, true), out.shape().back(), ctx.queue);
      },
      supports(true));
  // Two adjacent independent steps (launch groups' pairs) in one launch: both are decoded and
  // checked before anything is launched.
  LaunchKernels::get().add_pair(
      kOp, [](const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
              const Args& a2, const std::vector<Tensor>& o2, const KernelContext&) {
        const FusedPointwise first = fused_of(a1, o1), second = fused_of(a2, o2);
        fused_pointwise_pair(first, second, c1.queue);
      });
}

}  // namespace inplace::cuda
