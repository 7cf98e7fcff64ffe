#include "backend/symbolic.h"

#include <algorithm>

#include "core/error.h"

namespace inplace {

namespace {

using Op = SymInstr::Op;

int64_t wrap_add(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
}
int64_t wrap_sub(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
}
int64_t wrap_mul(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
}
int64_t floor_div(int64_t x, int64_t y) {
  if (y == -1) return wrap_sub(0, x);  // INT64_MIN / -1 wraps, as torch's int64 does
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}
int64_t py_mod(int64_t x, int64_t y) {
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

bool binary(Op op) {
  return op == Op::kAdd || op == Op::kSub || op == Op::kMul || op == Op::kFloorDiv ||
         op == Op::kMod || op == Op::kMin || op == Op::kMax;
}

// Saturating interval helpers: any overflow gives the unknown range.
SymRange unknown() {
  return {};
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_add_overflow(a, b, r);
}
bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_mul_overflow(a, b, r);
}

SymRange range_binary(Op op, SymRange x, SymRange y) {
  int64_t a, b, c, d;
  switch (op) {
    case Op::kAdd:
      if (add_overflows(x.lo, y.lo, &a) || add_overflows(x.hi, y.hi, &b)) return unknown();
      return {a, b};
    case Op::kSub:
      if (y.lo == INT64_MIN || y.hi == INT64_MIN) return unknown();
      if (add_overflows(x.lo, -y.hi, &a) || add_overflows(x.hi, -y.lo, &b)) return unknown();
      return {a, b};
    case Op::kMul:
      if (mul_overflows(x.lo, y.lo, &a) || mul_overflows(x.lo, y.hi, &b) ||
          mul_overflows(x.hi, y.lo, &c) || mul_overflows(x.hi, y.hi, &d))
        return unknown();
      return {std::min({a, b, c, d}), std::max({a, b, c, d})};
    case Op::kFloorDiv:
      if (y.lo > 0) {  // monotone in x for a positive divisor
        int64_t lo = std::min(floor_div(x.lo, y.lo), floor_div(x.lo, y.hi));
        int64_t hi = std::max(floor_div(x.hi, y.lo), floor_div(x.hi, y.hi));
        return {lo, hi};
      }
      return unknown();
    case Op::kMod:
      if (y.lo > 0) {
        if (x.lo >= 0 && x.hi < y.lo) return x;
        return {0, y.hi - 1};
      }
      if (y.hi < 0 && y.lo != INT64_MIN) return {y.lo + 1, 0};
      return unknown();
    case Op::kMin:
      return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
    case Op::kMax:
      return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
    default:
      return unknown();
  }
}

const char* infix(Op op) {
  switch (op) {
    case Op::kAdd:
      return " + ";
    case Op::kSub:
      return " - ";
    case Op::kMul:
      return " * ";
    case Op::kFloorDiv:
      return " // ";
    case Op::kMod:
      return " % ";
    default:
      return nullptr;
  }
}

}  // namespace

int64_t eval_sym(const SymExpr& e, const SymEnv& env, const std::string& what) {
  int64_t stack[16] = {};  // an empty expression reads 0
  std::vector<int64_t> big;
  int64_t* st = stack;
  if (e.code.size() > 16) {
    big.resize(e.code.size());
    st = big.data();
  }
  size_t n = 0;
  for (const SymInstr& in : e.code) {
    switch (in.op) {
      case Op::kConst:
        st[n++] = in.a;
        break;
      case Op::kRead:
        st[n++] = env.read(in.a, in.b);
        break;
      case Op::kDim:
        st[n++] = env.dim(in.a, in.b);
        break;
      case Op::kScalar:
        st[n++] = (*env.scalars)[in.a];
        break;
      case Op::kNeg:
        st[n - 1] = wrap_sub(0, st[n - 1]);
        break;
      default: {
        int64_t y = st[--n], x = st[n - 1];
        switch (in.op) {
          case Op::kAdd:
            x = wrap_add(x, y);
            break;
          case Op::kSub:
            x = wrap_sub(x, y);
            break;
          case Op::kMul:
            x = wrap_mul(x, y);
            break;
          case Op::kFloorDiv:
            IP_CHECK(y != 0, kInvalidArgument, "[execute] ", what, ": integer division by zero");
            x = floor_div(x, y);
            break;
          case Op::kMod:
            IP_CHECK(y != 0, kInvalidArgument, "[execute] ", what, ": integer modulo by zero");
            x = py_mod(x, y);
            break;
          case Op::kMin:
            x = std::min(x, y);
            break;
          case Op::kMax:
            x = std::max(x, y);
            break;
          default:
            break;
        }
        st[n - 1] = x;
      }
    }
  }
  return st[0];
}

SymRange range_of(const SymExpr& e, const std::function<SymRange(const SymInstr&)>& leaf) {
  std::vector<SymRange> st;
  for (const SymInstr& in : e.code) {
    if (in.op == Op::kConst) {
      st.push_back({in.a, in.a});
    } else if (in.op == Op::kRead || in.op == Op::kDim || in.op == Op::kScalar) {
      st.push_back(leaf(in));
    } else if (in.op == Op::kNeg) {
      SymRange x = st.back();
      st.back() = (x.lo == INT64_MIN) ? unknown() : SymRange{-x.hi, -x.lo};
    } else {
      SymRange y = st.back();
      st.pop_back();
      st.back() = range_binary(in.op, st.back(), y);
    }
  }
  return st.empty() ? unknown() : st.back();
}

std::string sym_to_string(const SymExpr& e,
                          const std::function<std::string(const SymInstr&)>& name_of) {
  std::vector<std::string> st;
  for (const SymInstr& in : e.code) {
    if (in.op == Op::kConst) {
      st.push_back(std::to_string(in.a));
    } else if (in.op == Op::kRead || in.op == Op::kDim || in.op == Op::kScalar) {
      st.push_back(name_of(in));
    } else if (in.op == Op::kNeg) {
      st.back() = "-(" + st.back() + ")";
    } else {
      std::string y = st.back();
      st.pop_back();
      std::string& x = st.back();
      if (const char* s = infix(in.op))
        x = "(" + x + s + y + ")";
      else
        x = std::string(in.op == Op::kMin ? "min(" : "max(") + x + ", " + y + ")";
    }
  }
  std::string out = st.empty() ? "?" : st.back();
  if (out.size() > 2 && out.front() == '(' && out.back() == ')')
    out = out.substr(1, out.size() - 2);
  return out;
}

void validate_sym(const SymExpr& e, int64_t self_index, int64_t num_inputs, int64_t num_dyn,
                  const std::string& where) {
  int64_t depth = 0;
  IP_CHECK(!e.code.empty(), kCorrupt, "[plan] ", where, " is empty");
  for (const SymInstr& in : e.code) {
    IP_CHECK(static_cast<int>(in.op) < kNumSymOps, kCorrupt, "[plan] ", where,
             " has unknown op code ", static_cast<int>(in.op));
    switch (in.op) {
      case Op::kConst:
        ++depth;
        break;
      case Op::kRead:
        IP_CHECK(in.a >= 0 && in.a < num_inputs && in.b >= 0, kCorrupt, "[plan] ", where,
                 " reads missing input ", in.a, " element ", in.b);
        ++depth;
        break;
      case Op::kDim:
        IP_CHECK(in.a >= 0 && in.a < num_dyn && in.b >= 0, kCorrupt, "[plan] ", where,
                 " reads dim ", in.b, " of missing dynamic value ", in.a);
        ++depth;
        break;
      case Op::kScalar:
        IP_CHECK(in.a >= 0 && in.a < self_index, kCorrupt, "[plan] ", where, " reads scalar ", in.a,
                 ", which is not an earlier one");
        ++depth;
        break;
      case Op::kNeg:
        IP_CHECK(depth >= 1, kCorrupt, "[plan] ", where, " underflows its stack");
        break;
      default:
        IP_CHECK(binary(in.op) && depth >= 2, kCorrupt, "[plan] ", where, " underflows its stack");
        --depth;
    }
  }
  IP_CHECK(depth == 1, kCorrupt, "[plan] ", where, " leaves ", depth, " values on its stack");
}

}  // namespace inplace
