// Comparisons (eq ne lt le gt ge) in the common dtype, and logical and/or/xor on truth values.
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_loop.h"

namespace inplace::cpu {

namespace {

template <typename T>
void compare_typed(CompareOp op, const Tensor& out, const Operand& a, const Operand& b) {
  using M = opmath_t<T>;
  const auto x = detail::prepare<T>(a), y = detail::prepare<T>(b);
  auto run = [&](auto f) { detail::run_binary<T, bool>(out, x, y, f); };
  switch (op) {
    case CompareOp::kEq:
      return run([](M p, M q) { return p == q; });
    case CompareOp::kNe:
      return run([](M p, M q) { return p != q; });
    case CompareOp::kLt:
      return run([](M p, M q) { return p < q; });
    case CompareOp::kLe:
      return run([](M p, M q) { return p <= q; });
    case CompareOp::kGt:  // swapped into lt / le by compare()
    case CompareOp::kGe:
    case CompareOp::kAnd:
    case CompareOp::kOr:
    case CompareOp::kXor:
      break;
  }
  IP_ASSERT(false, "comparisons are handled by compare_typed");
}

}  // namespace

void compare(CompareOp op, const Tensor& out, const Operand& a, const Operand& b, DType compute) {
  IP_ASSERT(out.dtype() == DType::kBool, "comparison output is bool");
  const bool logical = op == CompareOp::kAnd || op == CompareOp::kOr || op == CompareOp::kXor;
  if (!logical) {
    // a > b is b < a: two fewer functors to instantiate for every dtype.
    if (op == CompareOp::kGt || op == CompareOp::kGe) {
      const CompareOp flipped = op == CompareOp::kGt ? CompareOp::kLt : CompareOp::kLe;
      visit_dtype(compute, [&]<typename T>() { compare_typed<T>(flipped, out, b, a); });
      return;
    }
    visit_dtype(compute, [&]<typename T>() { compare_typed<T>(op, out, a, b); });
    return;
  }
  // Logical ops look only at truth values: convert each side to bool (x != 0, NaN is true).
  const auto x = detail::prepare<bool>(a), y = detail::prepare<bool>(b);
  auto run = [&](auto f) { detail::run_binary<bool, bool>(out, x, y, f); };
  if (op == CompareOp::kAnd) return run([](bool p, bool q) { return p && q; });
  if (op == CompareOp::kOr) return run([](bool p, bool q) { return p || q; });
  run([](bool p, bool q) { return p != q; });
}

}  // namespace inplace::cpu
