// Known spellings of pointwise programs (ops/pointwise_forms.h).
#include "ops/pointwise_forms.h"

#include <bit>

#include "ops/elementwise_codes.h"

namespace inplace::pointwise {

namespace {

// A number as the one-dtype interpreter reads it into a float register (number_as<float>).
float float_of(int32_t kind, int32_t lo, int32_t hi) {
  const uint64_t bits = join_bits(lo, hi);
  switch (static_cast<ScalarKind>(kind)) {
    case ScalarKind::kFloat:
      return static_cast<float>(std::bit_cast<double>(bits));
    case ScalarKind::kBool:
      return bits != 0 ? 1.f : 0.f;
    default:
      return static_cast<float>(static_cast<int64_t>(bits));
  }
}

class Matcher {
 public:
  Matcher(const Instr* code, int n) : code_(code), n_(n) {}

  bool reg(int r) const { return r >= 0 && r < n_; }
  bool is_x(int r) const { return reg(r) && code_[r].op == Opcode::kLoad && code_[r].a == 0; }
  bool number(int r, float* v) const {
    if (!reg(r) || code_[r].op != Opcode::kConst) return false;
    *v = float_of(code_[r].a & 3, code_[r].b, code_[r].c);
    return true;
  }
  bool binary(int r, BinaryOp op, int* a, int* b) const {
    if (!reg(r) || code_[r].op != Opcode::kBinary || code_[r].c != static_cast<int32_t>(op))
      return false;
    *a = code_[r].a, *b = code_[r].b;
    return true;
  }
  // op(r0, r1) where f(first) and g(second) hold, in either order.
  template <typename F, typename G>
  bool either(int r, BinaryOp op, F&& f, G&& g) const {
    int a = 0, b = 0;
    if (!binary(r, op, &a, &b)) return false;
    return (f(a) && g(b)) || (f(b) && g(a));
  }

 private:
  const Instr* code_;
  int n_;
};

}  // namespace

bool match_gelu_new(const Instr* code, int n, GeluNew* form) {
  if (n < 2 || code[n - 1].op != Opcode::kStore) return false;
  for (int k = 0; k < n; ++k)
    if (code[k].dtype != code[0].dtype) return false;
  const Matcher m(code, n);
  GeluNew f;
  auto x = [&](int r) { return m.is_x(r); };
  // x * half
  auto half = [&](int r) {
    return m.either(r, BinaryOp::kMul, x, [&](int q) { return m.number(q, &f.half); });
  };
  // x ** p
  auto cube = [&](int r) {
    if (!m.reg(r) || code[r].op != Opcode::kPowScalar || !x(code[r].a)) return false;
    f.p = float_of(code[r].b, code[r].c, code[r].d);
    return true;
  };
  // x + (x ** p) * a
  auto inner = [&](int r) {
    return m.either(r, BinaryOp::kAdd, x, [&](int q) {
      return m.either(q, BinaryOp::kMul, cube, [&](int s) { return m.number(s, &f.a); });
    });
  };
  // tanh(inner * c) + one
  auto tanh_plus = [&](int r) {
    return m.either(
        r, BinaryOp::kAdd,
        [&](int q) {
          if (!m.reg(q) || code[q].op != Opcode::kUnary ||
              code[q].b != static_cast<int32_t>(UnaryOp::kTanh))
            return false;
          return m.either(code[q].a, BinaryOp::kMul, inner,
                          [&](int s) { return m.number(s, &f.c); });
        },
        [&](int q) { return m.number(q, &f.one); });
  };
  if (!m.either(code[n - 1].a, BinaryOp::kMul, half, tanh_plus)) return false;
  *form = f;
  return true;
}

}  // namespace inplace::pointwise
