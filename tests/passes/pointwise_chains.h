// Random chains of 2-12 elementwise ops for the fuse_pointwise tests (the cpu's in
// tests/passes, the GPU suite's in tests/cuda): unary math, arithmetic with tensors and Python
// numbers, pow by a number, casts, comparisons, where / masked_fill, over random broadcast
// shapes and dtypes (float32, bfloat16, float16, int32, int64, bool), an intermediate now and
// then read again by a later op; with row reductions (sum,
// mean, amax, amin over the last dim, broadcast back over the rows) for fused_rows.
#pragma once
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "ir/builder.h"
#include "ops/elementwise_args.h"

namespace inplace::testing {

inline const DType kDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                DType::kInt32,   DType::kInt64,    DType::kBool};

struct Val {
  Node* node;
  Shape shape;
  DType dtype;
};

inline DType promote(const Val& a, const Val* b, std::optional<Scalar> s) {
  elementwise::Operand x(Tensor::meta(a.shape, a.dtype));
  elementwise::Operand y =
      b ? elementwise::Operand(Tensor::meta(b->shape, b->dtype)) : elementwise::Operand(*s);
  return elementwise::result_type({&x, &y});
}

// Writes a random chain; returns false when the draw made nothing worth fusing.
struct ChainOptions {
  // Inputs past the first may be 0-dim tensors (which do not take part in type promotion).
  bool zero_dim_inputs = false;
  // An input may reach the chain as a view: the transpose of its placeholder, or every second
  // element of a placeholder twice as long in the last dim.
  bool strided_inputs = false;
  // Steps may reduce a row (sum, mean, amax or amin over the last dim, keepdim) and combine the
  // row's value with the first input; rows are then 1 to 600 long, float64 joins the dtypes.
  bool row_reductions = false;
};

class ChainWriter {
 public:
  explicit ChainWriter(uint32_t seed, ChainOptions options = {})
      : rng_(seed), b_("chain"), options_(options) {}

  std::unique_ptr<Graph> write(std::vector<Tensor>* inputs) {
    static const int64_t kRowLengths[] = {1, 2, 3, 5, 8, 64, 257, 600};
    const Shape full = {2, pick(1, 3),
                        options_.row_reductions ? kRowLengths[pick(0, 7)] : int64_t{pick(3, 9)}};
    full_ = full;
    const int n_inputs = pick(1, 3);
    std::vector<Val> ins;
    for (int i = 0; i < n_inputs; ++i) {
      Shape s = full;
      for (auto& d : s)
        if (pick(0, 3) == 0) d = 1;
      if (i == 0) s = full;
      if (i > 0 && options_.zero_dim_inputs && pick(0, 2) == 0) s = {};
      DType t = kDTypes[pick(0, i == 0 ? 4 : 5)];
      if (options_.row_reductions && i == 0 && pick(0, 4) == 0) t = DType::kFloat64;
      const int layout = options_.strided_inputs && !s.empty() ? pick(0, 2) : 0;
      Shape stored = s;
      if (layout == 1) std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
      if (layout == 2) stored.back() *= 2;
      Node* p = b_.set_meta(b_.placeholder("in" + std::to_string(i)), stored, t);
      if (layout == 1) p = call("aten.transpose.int", {p, -1, -2});
      if (layout == 2) p = call("aten.slice.Tensor", {p, -1, 0, stored.back(), 2});
      ins.push_back({p, s, t});
      inputs->push_back(random_tensor(stored, t));
    }
    Val cur = ins[0];
    first_ = ins[0];
    const int n_ops = pick(2, 12);
    // An op's other operand is an input, or now and then an earlier intermediate (read twice:
    // within one fused step, or by two).
    std::vector<Val> made;
    for (int k = 0; k < n_ops; ++k) {
      const bool earlier = made.size() > 1 && pick(0, 3) == 0;
      const Val other =
          earlier ? made[pick(0, static_cast<int>(made.size()) - 2)] : ins[pick(0, n_inputs - 1)];
      cur = step(cur, other);
      made.push_back(cur);
    }
    b_.output(arg::tuple({cur.node}));
    return b_.build();
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  Tensor random_tensor(const Shape& s, DType t) {
    Tensor f = Tensor::empty(s, DType::kFloat32);
    for (int64_t i = 0; i < f.numel(); ++i)
      f.data<float>()[i] = is_floating(t) ? static_cast<float>(pick(-3000, 3000)) / 997.0f
                                          : static_cast<float>(pick(-4, 4));
    return f.to(t);
  }

  Node* call(const char* target, std::vector<Arg> args) {
    return b_.call_function(target, std::move(args));
  }

  Val step(const Val& x, const Val& other) {
    const Shape shape = broadcast_shapes(x.shape, other.shape, "test");
    const bool fl = is_floating(x.dtype);
    switch (pick(0, options_.row_reductions ? 10 : 8)) {
      case 9:
      case 10: {  // a row reduction, its value combined with the first input's rows
        if (!fl || x.shape != full_) break;
        static const char* kOps[] = {"aten.sum.dim_IntList", "aten.mean.dim", "aten.amax.default",
                                     "aten.amin.default"};
        const int64_t dim = pick(0, 1) ? -1 : static_cast<int64_t>(full_.size()) - 1;
        Node* r = call(kOps[pick(0, 3)], {x.node, arg::ints({dim}), true});
        Shape rs = full_;
        rs.back() = 1;
        const Val red{r, rs, x.dtype};
        static const char* kCombine[] = {"aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor",
                                         "aten.add.Tensor"};
        const int o = pick(0, 3);
        if (first_.dtype == DType::kBool && o == 0) break;
        DType t = promote(first_, &red, std::nullopt);
        if (o == 2 && !is_floating(t)) t = DType::kFloat32;
        return {call(kCombine[o], {first_.node, r}), full_, t};
      }
      case 0: {  // float math
        if (x.dtype == DType::kBool) break;
        static const char* kOps[] = {"aten.exp.default",     "aten.tanh.default",
                                     "aten.sigmoid.default", "aten.rsqrt.default",
                                     "aten.sin.default",     "aten.sqrt.default"};
        return {call(kOps[pick(0, 5)], {x.node}), x.shape, fl ? x.dtype : DType::kFloat32};
      }
      case 1:  // float-only activations
        if (!fl) break;
        return {call(pick(0, 1) ? "aten.silu.default" : "aten.gelu.default", {x.node}), x.shape,
                x.dtype};
      case 2: {  // neg abs relu
        if (x.dtype == DType::kBool) break;
        static const char* kOps[] = {"aten.neg.default", "aten.abs.default", "aten.relu.default"};
        return {call(kOps[pick(0, 2)], {x.node}), x.shape, x.dtype};
      }
      case 3: {  // arithmetic with a tensor
        static const char* kOps[] = {"aten.add.Tensor", "aten.mul.Tensor", "aten.sub.Tensor",
                                     "aten.div.Tensor", "aten.maximum.default"};
        const int o = pick(0, 4);
        if (o == 2 && (x.dtype == DType::kBool || other.dtype == DType::kBool)) break;
        DType t = promote(x, &other, std::nullopt);
        if (o == 3 && !is_floating(t)) t = DType::kFloat32;
        return {call(kOps[o], {x.node, other.node}), shape, t};
      }
      case 4: {  // arithmetic with a Python number (kept in opmath by mul and div)
        static const char* kOps[] = {"aten.add.Tensor", "aten.mul.Tensor", "aten.div.Tensor"};
        const int o = pick(0, 2);
        const bool f = pick(0, 1);
        const Scalar s = f ? Scalar(0.1 * pick(1, 30)) : Scalar(int64_t{pick(1, 5)});
        DType t = promote(x, nullptr, s);
        if (o == 2 && !is_floating(t)) t = DType::kFloat32;
        Arg a = f ? Arg(s.to_double()) : Arg(s.to_int());
        return {call(kOps[o], {x.node, a}), x.shape, t};
      }
      case 5: {  // pow by a number: the fast paths and the general one
        if (x.dtype == DType::kBool) break;
        static const double kE[] = {2.0, 0.5, 3.0, -1.0, 1.7, -2.0};
        const double e = is_floating(x.dtype) ? kE[pick(0, 5)] : 2.0;
        const Scalar s = is_floating(x.dtype) ? Scalar(e) : Scalar(int64_t{2});
        Arg a = is_floating(x.dtype) ? Arg(e) : Arg(2);
        return {call("aten.pow.Tensor_Scalar", {x.node, a}), x.shape, promote(x, nullptr, s)};
      }
      case 6: {  // a cast
        const DType t = kDTypes[pick(0, 5)];
        return {call("aten._to_copy.default", {x.node}), x.shape, t};
      }
      case 7: {  // a comparison, then where over it
        static const char* kOps[] = {"aten.lt.Tensor", "aten.gt.Tensor", "aten.eq.Tensor",
                                     "aten.ge.Tensor"};
        Node* c = call(kOps[pick(0, 3)], {x.node, other.node});
        if (pick(0, 1)) return {c, shape, DType::kBool};
        return {call("aten.where.self", {c, x.node, other.node}), shape,
                promote(x, &other, std::nullopt)};
      }
      case 8: {  // masked_fill by a comparison with a number
        if (x.dtype == DType::kBool) break;
        Node* m = call("aten.gt.Scalar", {other.node, 0});
        Node* r = call("aten.masked_fill.Scalar", {x.node, m, is_floating(x.dtype) ? -1.5 : -1.0});
        return {r, shape, x.dtype};
      }
    }
    return {call("aten.mul.Tensor", {x.node, other.node}), shape, promote(x, &other, std::nullopt)};
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  ChainOptions options_;
  Shape full_;  // the chain's result shape (the first input's)
  Val first_{};
};

// _to_copy takes its dtype as a keyword: the writer's casts get it here.
inline void set_cast_dtypes(Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  for (Node* n : g.nodes())
    if (n->target == "aten._to_copy.default")
      n->kwargs.push_back({"dtype", Value::dtype_value(kDTypes[rng() % 6])});
}

inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

}  // namespace inplace::testing
