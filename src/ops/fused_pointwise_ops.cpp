// fused_pointwise and fused_rows: their programs' decoder and checks (ops/fused_pointwise_args.h)
// and their shape rule, the broadcast of the inputs with the program's result dtype.
#include <bit>
#include <string>

#include "core/error.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"

namespace inplace {

namespace pointwise {

namespace {

constexpr const char* kOp = "fused_pointwise";
constexpr const char* kRowsOp = "fused_rows";

}  // namespace

bool unary_supports(UnaryOp op, DType t) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kRelu:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
      return t != DType::kBool;
    case UnaryOp::kBitwiseNot:
      return is_integral(t, true);
    case UnaryOp::kLogicalNot:
      return t == DType::kBool;
    default:  // the float functions
      return is_floating(t);
  }
}

bool binary_supports(BinaryOp op, DType t) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kMul:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
      return true;
    case BinaryOp::kSub:
    case BinaryOp::kPow:
      return t != DType::kBool;
    case BinaryOp::kBitwiseAnd:
    case BinaryOp::kBitwiseOr:
    case BinaryOp::kBitwiseXor:
      return is_integral(t, true);
    default:  // divisions: integer division by zero raises, so only floating ones fuse
      return is_floating(t);
  }
}

bool compare_supports(CompareOp op, DType t) {
  const bool logical = op == CompareOp::kAnd || op == CompareOp::kOr || op == CompareOp::kXor;
  return !logical || t == DType::kBool;
}

Scalar number_of(int32_t kind, int32_t lo, int32_t hi) {
  const uint64_t bits = join_bits(lo, hi);
  switch (static_cast<ScalarKind>(kind)) {
    case ScalarKind::kBool:
      return Scalar(bits != 0);
    case ScalarKind::kInt:
      return Scalar(static_cast<int64_t>(bits));
    case ScalarKind::kFloat:
      break;
  }
  return Scalar(std::bit_cast<double>(bits));
}

void split_number(Scalar s, int32_t* kind, int32_t* lo, int32_t* hi) {
  uint64_t bits = 0;
  if (s.is_float()) {
    *kind = static_cast<int32_t>(ScalarKind::kFloat);
    bits = std::bit_cast<uint64_t>(s.to_double());
  } else {
    *kind = static_cast<int32_t>(s.is_bool() ? ScalarKind::kBool : ScalarKind::kInt);
    bits = static_cast<uint64_t>(s.to_int());
  }
  *lo = static_cast<int32_t>(bits & 0xffffffff);
  *hi = static_cast<int32_t>(bits >> 32);
}

Program decode(const std::vector<int64_t>& ints, const std::vector<DType>& inputs, bool rows) {
  const char* kOp = rows ? kRowsOp : pointwise::kOp;
  const int64_t n = static_cast<int64_t>(ints.size()) / kWidth;
  IP_CHECK(ints.size() % kWidth == 0 && n >= 1 && n <= kMaxInstructions, kInvalidArgument, "[", kOp,
           "] a program is 1 to ", kMaxInstructions, " instructions of ", kWidth, " ints, got ",
           ints.size(), " ints");
  IP_CHECK(!inputs.empty() && inputs.size() <= static_cast<size_t>(kMaxInputs), kInvalidArgument,
           "[", kOp, "] takes 1 to ", kMaxInputs, " inputs, got ", inputs.size());
  for (int64_t v : ints)
    IP_CHECK(v >= 0 && v <= 0xffffffffll, kInvalidArgument, "[", kOp, "] program field ", v,
             " is outside [0, 2^32)");
  Program p;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* f = &ints[i * kWidth];
    auto fail = [&](const std::string& why) {
      IP_FAIL(kInvalidArgument, "[", kOp, "] instruction ", i, ": ", why);
    };
    if (f[0] >= kNumOpcodes) fail(str_cat("unknown opcode ", f[0]));
    if (f[1] >= kNumDTypes) fail(str_cat("unknown dtype code ", f[1]));
    Instr in;
    in.op = static_cast<Opcode>(f[0]);
    in.dtype = static_cast<uint8_t>(f[1]);
    // Fields are below 2^32; reinterpreting them as int32 keeps the halves of a number intact.
    in.a = static_cast<int32_t>(static_cast<uint32_t>(f[2]));
    in.b = static_cast<int32_t>(static_cast<uint32_t>(f[3]));
    in.c = static_cast<int32_t>(static_cast<uint32_t>(f[4]));
    in.d = static_cast<int32_t>(static_cast<uint32_t>(f[5]));
    const DType t = static_cast<DType>(in.dtype);
    DType reg = t;
    // A register operand: an earlier instruction of dtype `want` (none: any).
    auto operand = [&](int64_t field, const DType* want) {
      if (field >= i) fail(str_cat("reads register ", field, ", not yet written"));
      if (want && p.reg[field] != *want)
        fail(str_cat("reads register ", field, " of ", dtype_name(p.reg[field]), " as ",
                     dtype_name(*want)));
    };
    const bool last = i == n - 1;
    if ((in.op == Opcode::kStore) != last) fail("the store is the last instruction, and only it");
    switch (in.op) {
      case Opcode::kLoad:
        if (f[2] >= static_cast<int64_t>(inputs.size()))
          fail(str_cat("loads input ", f[2], " of ", inputs.size()));
        if (inputs[f[2]] != t)
          fail(str_cat("loads ", dtype_name(inputs[f[2]]), " input ", f[2], " as ", dtype_name(t)));
        break;
      case Opcode::kConst:
        if ((f[2] & ~int64_t{kConstInOpmath}) > 2) fail(str_cat("unknown number kind ", f[2]));
        break;
      case Opcode::kCast:
        operand(f[2], nullptr);
        break;
      case Opcode::kUnary:
        operand(f[2], &t);
        if (f[3] > static_cast<int64_t>(UnaryOp::kHardswish) ||
            !unary_supports(static_cast<UnaryOp>(f[3]), t))
          fail(str_cat("unary op ", f[3], " does not run on ", dtype_name(t)));
        break;
      case Opcode::kBinary:
        operand(f[2], &t);
        operand(f[3], &t);
        if (f[4] > static_cast<int64_t>(BinaryOp::kBitwiseXor) ||
            !binary_supports(static_cast<BinaryOp>(f[4]), t))
          fail(str_cat("binary op ", f[4], " does not run on ", dtype_name(t)));
        break;
      case Opcode::kPowScalar:
        operand(f[2], &t);
        if (f[3] > 2) fail(str_cat("unknown number kind ", f[3]));
        if (t == DType::kBool) fail("pow does not run on bool");
        break;
      case Opcode::kCompare:
        operand(f[2], &t);
        operand(f[3], &t);
        if (f[4] > static_cast<int64_t>(CompareOp::kXor) ||
            !compare_supports(static_cast<CompareOp>(f[4]), t))
          fail(str_cat("comparison ", f[4], " does not run on ", dtype_name(t)));
        reg = DType::kBool;
        break;
      case Opcode::kWhere: {
        const DType b = DType::kBool;
        operand(f[2], &b);
        operand(f[3], &t);
        operand(f[4], &t);
        break;
      }
      case Opcode::kStore:
        operand(f[2], &t);
        p.out = t;
        break;
      case Opcode::kReduce:
        if (!rows) fail("a row reduction is a fused_rows instruction");
        operand(f[2], &t);
        if (!is_floating(t)) fail(str_cat("a row reduction of ", dtype_name(t)));
        if (f[3] >= kNumReduceOps) fail(str_cat("unknown reduction ", f[3]));
        ++p.reductions;
        break;
    }
    p.code.push_back(in);
    p.reg.push_back(reg);
  }
  return p;
}

std::vector<int64_t> encode(const std::vector<Instr>& code) {
  std::vector<int64_t> out;
  for (const Instr& in : code)
    for (int32_t v :
         {static_cast<int32_t>(in.op), static_cast<int32_t>(in.dtype), in.a, in.b, in.c, in.d})
      out.push_back(static_cast<int64_t>(static_cast<uint32_t>(v)));
  return out;
}

}  // namespace pointwise

namespace {

// The shape rule of both ops: the inputs' broadcast, the program's result dtype; fused_rows
// reduces over the last dim, so its result has one.
InferFn program_shape(bool rows) {
  return [rows](const Args& a) {
    const char* op = rows ? pointwise::kRowsOp : pointwise::kOp;
    std::vector<DType> dtypes;
    Shape shape;
    IP_CHECK(a[0].is_sequence(), kInvalidArgument, "[", op, "] inputs must be a tensor list");
    for (const Value& v : a[0].items) {
      const Tensor& t = v.as_tensor(op);
      dtypes.push_back(t.dtype());
      shape = broadcast_shapes(shape, t.shape(), op);
    }
    const pointwise::Program p = pointwise::decode(a[1].as_int_list(op), dtypes, rows);
    IP_CHECK(!rows || !shape.empty(), kInvalidArgument, "[", op,
             "] reduces rows over the last dim, but its inputs broadcast to a 0-dim result");
    return std::vector<Tensor>{Tensor::meta(shape, p.out)};
  };
}

}  // namespace

void register_fused_pointwise_ops(Registry& r) {
  r.add_out("fused_pointwise(Tensor[] inputs, int[] program) -> Tensor", program_shape(false),
            nullptr);
  // Every element reads its whole row of the inputs: no kPointwise tag (the result never takes
  // an input's place).
  r.add_out("fused_rows(Tensor[] inputs, int[] program) -> Tensor", program_shape(true), nullptr);
  // Each element reads only its own inputs' elements: the engine may place the result on an
  // input of identical layout (a state updated by a chain); both kernels read an element's
  // inputs before writing it.
  r.tag({"fused_pointwise"}, kPointwise);
}

}  // namespace inplace
