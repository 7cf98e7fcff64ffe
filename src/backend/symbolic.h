// Runtime scalars: integers an engine reads from its inputs on every call (a decode position, a
// ring-buffer slot, a prompt length) and the integer arithmetic the program does on them. Each
// is a small postfix program evaluated once per call, before any kernel runs; sizes, offsets and
// bounds that depend on them are recomputed from these values (see docs/engine.md, "Runtime
// values and bounds").
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace inplace {

struct SymInstr {
  enum class Op : uint8_t {
    kConst,   // push a
    kRead,    // push element b (row-major) of input binding a
    kDim,     // push dim b of dynamic value a
    kScalar,  // push the value of scalar a (an earlier one)
    kAdd,
    kSub,
    kMul,
    kFloorDiv,
    kMod,  // pop y, pop x, push x op y (Python semantics)
    kNeg,
    kMin,
    kMax,
  };
  Op op = Op::kConst;
  int64_t a = 0, b = 0;
  bool operator==(const SymInstr&) const = default;
};
constexpr int kNumSymOps = static_cast<int>(SymInstr::Op::kMax) + 1;

// An inclusive range of values a scalar may take (for bounds); int64 limits when unknown.
struct SymRange {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  bool bounded_above() const { return hi != INT64_MAX; }
};

struct SymExpr {
  std::vector<SymInstr> code;
  bool operator==(const SymExpr&) const = default;
};

// What evaluation reads: input elements, dynamic dims, earlier scalars. `what` names the
// scalar for errors.
struct SymEnv {
  std::function<int64_t(int64_t input, int64_t element)> read;
  std::function<int64_t(int64_t dyn, int64_t dim)> dim;
  const std::vector<int64_t>* scalars = nullptr;
};

// Evaluates with Python integer semantics (floor division and modulo follow the divisor's sign;
// division or modulo by zero is an error naming `what`). Overflow wraps like torch's int64.
int64_t eval_sym(const SymExpr& e, const SymEnv& env, const std::string& what);
// The range of `e` given the ranges of what it reads (interval arithmetic, conservative).
SymRange range_of(const SymExpr& e, const std::function<SymRange(const SymInstr&)>& leaf);
// Readable form: "pos[0] + 1", "t % 4"; `name_of` spells leaves (reads, dims, scalars).
std::string sym_to_string(const SymExpr& e,
                          const std::function<std::string(const SymInstr&)>& name_of);
// Throws kCorrupt naming `where` when the program is malformed (stack underflow, unknown op, a
// scalar reference that is not earlier, a leftover stack); `num_inputs`/`num_dyn` bound indices.
void validate_sym(const SymExpr& e, int64_t self_index, int64_t num_inputs, int64_t num_dyn,
                  const std::string& where);

}  // namespace inplace
