// The cpu's pointwise program interpreter (pointwise_exec.h).
#include "kernels/cpu/pointwise_exec.h"

#include <algorithm>

#include "core/strided_loop.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_math.h"

namespace inplace::cpu::pointwise_exec {

namespace {

using pointwise::Instr;
using pointwise::Opcode;

// Output elements start .. start + n of `shape` as runs along the last dim: run(k, off, s, len)
// for block elements k .. k + len, at element offsets off, off + s, ... of a tensor of
// `strides` (s its last stride). The multi-index is worked out once a block and carried once a
// run, so a load or store is a plain loop (a copy, a fill or a gather) over each run.
template <typename Run>
void for_each_run(const Shape& shape, const Shape& strides, int64_t start, int64_t n, Run&& run) {
  const int nd = static_cast<int>(shape.size());
  if (nd == 0) return run(int64_t{0}, int64_t{0}, int64_t{0}, n);
  int64_t idx[64];
  int64_t off = 0, rem = start;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    off += idx[d] * strides[d];
  }
  const int64_t cols = shape[nd - 1], s = strides[nd - 1];
  for (int64_t k = 0; k < n;) {
    const int64_t len = std::min(n - k, cols - idx[nd - 1]);
    run(k, off, s, len);
    k += len;
    off -= idx[nd - 1] * s;  // back to the row's first element, then on to the next row
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void load(const Block& b, const View& v, opmath_t<T>* r) {
  using M = opmath_t<T>;
  const T* src = reinterpret_cast<const T*>(v.data);
  if (v.flat) {
    src += b.start;
    for (int64_t k = 0; k < b.n; ++k) r[k] = M(src[k]);
  } else if (v.one) {
    std::fill(r, r + b.n, M(src[0]));
  } else {
    for_each_run(*b.shape, v.strides, b.start, b.n,
                 [&](int64_t k, int64_t off, int64_t s, int64_t len) {
                   M* d = r + k;
                   const T* p = src + off;
                   if (s == 1) {
                     for (int64_t j = 0; j < len; ++j) d[j] = M(p[j]);
                   } else if (s == 0) {
                     std::fill(d, d + len, M(p[0]));
                   } else {
                     for (int64_t j = 0; j < len; ++j) d[j] = M(p[j * s]);
                   }
                 });
  }
}

template <typename T>
void store(const Block& b, const opmath_t<T>* x) {
  T* dst = reinterpret_cast<T*>(b.out->data);
  if (b.out->flat) {
    dst += b.start;
    for (int64_t k = 0; k < b.n; ++k) dst[k] = T(x[k]);
  } else {
    for_each_run(*b.shape, b.out->strides, b.start, b.n,
                 [&](int64_t k, int64_t off, int64_t s, int64_t len) {
                   const opmath_t<T>* v = x + k;
                   T* p = dst + off;
                   if (s == 1) {
                     for (int64_t j = 0; j < len; ++j) p[j] = T(v[j]);
                   } else {
                     for (int64_t j = 0; j < len; ++j) p[j * s] = T(v[j]);
                   }
                 });
  }
}

template <typename T>
void compare(CompareOp op, const opmath_t<T>* x, const opmath_t<T>* y, bool* r, int64_t n) {
  auto run = [&](auto f) {
    for (int64_t k = 0; k < n; ++k) r[k] = f(x[k], y[k]);
  };
  using M = opmath_t<T>;
  switch (op) {
    case CompareOp::kEq:
      return run([](M p, M q) { return p == q; });
    case CompareOp::kNe:
      return run([](M p, M q) { return p != q; });
    case CompareOp::kLt:
      return run([](M p, M q) { return p < q; });
    case CompareOp::kLe:
      return run([](M p, M q) { return p <= q; });
    case CompareOp::kGt:
      return run([](M p, M q) { return q < p; });
    case CompareOp::kGe:
      return run([](M p, M q) { return q <= p; });
    case CompareOp::kAnd:
      return run([](M p, M q) { return bool(p) && bool(q); });
    case CompareOp::kOr:
      return run([](M p, M q) { return bool(p) || bool(q); });
    case CompareOp::kXor:
      return run([](M p, M q) { return bool(p) != bool(q); });
  }
}

// Instruction i over the block into register i (decode checked every operand and dtype).
template <typename T>
void exec_as(const Block& b, size_t i) {
  using M = opmath_t<T>;
  const Instr& in = b.p->code[i];
  Reg* regs = b.regs;
  M* r = as<M>(regs[i]);
  const int64_t n = b.n;
  // T(f(...)): each result rounds to its dtype as the unfused kernel's store does.
  auto map1 = [&](const M* x) {
    return [&, x](auto f) {
      for (int64_t k = 0; k < n; ++k) r[k] = M(T(f(x[k])));
    };
  };
  switch (in.op) {
    case Opcode::kLoad:
      return load<T>(b, (*b.inputs)[in.a], r);
    case Opcode::kConst: {
      const Scalar s = pointwise::number_of(in.a & 3, in.b, in.c);
      const M v = (in.a & pointwise::kConstInOpmath) ? s.to<M>() : M(s.to<T>());
      return std::fill(r, r + n, v);
    }
    case Opcode::kCast:
      return visit_dtype(b.p->reg[in.a], [&]<typename S>() {
        using MS = opmath_t<S>;
        const MS* x = as<MS>(regs[in.a]);
        for (int64_t k = 0; k < n; ++k) r[k] = M(convert<T>(S(x[k])));
      });
    case Opcode::kUnary: {
      const M* x = as<M>(regs[in.a]);
      const auto op = static_cast<UnaryOp>(in.b);
      if constexpr (std::is_same_v<T, float>) {
        if (op == UnaryOp::kSilu) return silu_f32(x, r, n);  // as the unfused contiguous path
      }
      math::unary_functor<T>(op, map1(x));
      return;
    }
    case Opcode::kBinary: {
      const M* x = as<M>(regs[in.a]);
      const M* y = as<M>(regs[in.b]);
      // A row value (only its first element computed: `scalar`) is read as one number.
      const bool sx = b.scalar && (*b.scalar)[in.a], sy = b.scalar && (*b.scalar)[in.b];
      math::binary_functor<T>(static_cast<BinaryOp>(in.c), Scalar(1), [&](auto f) {
        if (sy && !sx) {
          const M v = y[0];
          for (int64_t k = 0; k < n; ++k) r[k] = M(T(f(x[k], v)));
        } else if (sx && !sy) {
          const M v = x[0];
          for (int64_t k = 0; k < n; ++k) r[k] = M(T(f(v, y[k])));
        } else {
          for (int64_t k = 0; k < n; ++k) r[k] = M(T(f(x[k], y[k])));
        }
      });
      return;
    }
    case Opcode::kPowScalar:
      math::pow_scalar_functor<T>(pointwise::number_of(in.b, in.c, in.d), map1(as<M>(regs[in.a])));
      return;
    case Opcode::kCompare:
      return compare<T>(static_cast<CompareOp>(in.c), as<M>(regs[in.a]), as<M>(regs[in.b]),
                        as<bool>(regs[i]), n);
    case Opcode::kWhere: {
      const bool* c = as<bool>(regs[in.a]);
      const M* x = as<M>(regs[in.b]);
      const M* y = as<M>(regs[in.c]);
      for (int64_t k = 0; k < n; ++k) r[k] = c[k] ? x[k] : y[k];
      return;
    }
    case Opcode::kStore:
      return store<T>(b, as<M>(regs[in.a]));
    case Opcode::kReduce:  // the row's value (fused_rows computed it before this pass)
      return std::fill(r, r + n, static_cast<M>(b.reduced[i]));
  }
}

}  // namespace

View view_of(const Tensor& t, const Shape& shape, const char* op) {
  View v;
  v.data = static_cast<char*>(t.data_ptr());
  v.one = t.numel() == 1;
  v.flat = !v.one && t.is_contiguous() && t.shape() == shape;
  v.strides = broadcast_strides(t, shape, op);
  return v;
}

pointwise::Program step_program(const Args& args, const char* op, bool rows,
                                std::vector<Tensor>* inputs) {
  std::vector<DType> dtypes;
  for (const Value& v : args[0].items) {
    inputs->push_back(v.as_tensor(op));
    dtypes.push_back(inputs->back().dtype());
  }
  return pointwise::decode(args[1].as_int_list(op), dtypes, rows);
}

void exec(const Block& b, size_t i) {
  visit_dtype(static_cast<DType>(b.p->code[i].dtype), [&]<typename T>() { exec_as<T>(b, i); });
}

void exec_uniform(const Block& b, size_t i) {
  Block one = b;
  one.n = 1;
  exec(one, i);
  if (b.scalar && (*b.scalar)[i]) return;  // its readers read element 0
  visit_dtype(b.p->reg[i], [&]<typename T>() {
    using M = opmath_t<T>;
    M* r = as<M>(b.regs[i]);
    std::fill(r + 1, r + b.n, r[0]);
  });
}

std::vector<bool> scalar_registers(const pointwise::Program& p, const std::vector<bool>& uniform) {
  std::vector<bool> s = uniform;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instr& in = p.code[i];
    if (in.op == Opcode::kReduce) {  // reduces its operand's whole register
      s[in.a] = false;
      continue;
    }
    if (uniform[i]) continue;  // a uniform reader computes its element 0 from element 0
    switch (in.op) {  // a binary reads a scalar operand as one number; others, the register
      case Opcode::kWhere:
        s[in.c] = false;
        [[fallthrough]];
      case Opcode::kCompare:
        s[in.b] = false;
        [[fallthrough]];
      case Opcode::kCast:
      case Opcode::kUnary:
      case Opcode::kPowScalar:
      case Opcode::kStore:
        s[in.a] = false;
        break;
      case Opcode::kLoad:
      case Opcode::kConst:
      case Opcode::kBinary:
      case Opcode::kReduce:
        break;
    }
  }
  return s;
}

std::vector<bool> uniform_registers(const pointwise::Program& p) {
  std::vector<bool> u(p.code.size(), false);
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instr& in = p.code[i];
    switch (in.op) {
      case Opcode::kConst:
      case Opcode::kReduce:
        u[i] = true;
        break;
      case Opcode::kLoad:
      case Opcode::kStore:
        break;
      case Opcode::kBinary:
      case Opcode::kCompare:
        u[i] = u[in.a] && u[in.b];
        break;
      case Opcode::kWhere:
        u[i] = u[in.a] && u[in.b] && u[in.c];
        break;
      default:  // kCast, kUnary, kPowScalar
        u[i] = u[in.a];
    }
  }
  return u;
}

}  // namespace inplace::cpu::pointwise_exec
