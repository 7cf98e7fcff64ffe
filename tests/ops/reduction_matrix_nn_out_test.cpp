// The engine's allocation-free path: every reduction / matrix / nn op's `out` must fill
// pre-allocated results whose old contents are garbage, and agree bit for bit with eager.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> u(0, 1);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = is_floating(dt) ? u(g) : std::round(u(g) * 3);
  return t.to(dt);
}

// Results pre-filled with 0xFF bytes: NaN for floats, -1 for signed ints.
std::vector<Tensor> garbage_results(const std::vector<Tensor>& metas) {
  std::vector<Tensor> out;
  for (const Tensor& m : metas) {
    Tensor t = Tensor::empty(m.shape(), m.dtype());
    if (t.nbytes() > 0) std::memset(t.data_ptr(), 0xFF, t.nbytes());
    out.push_back(t);
  }
  return out;
}

struct Case {
  std::string op;  // full name
  Args args;
};

TEST(OutPath, FillsGarbageResultsLikeEager) {
  const Tensor x = random_tensor({3, 4, 6}, DType::kFloat32, 1);
  const Tensor xt = random_tensor({6, 4, 3}, DType::kFloat32, 2).permute({2, 1, 0});
  const Tensor xi = random_tensor({3, 5}, DType::kInt32, 3);
  const Tensor w = random_tensor({5, 6}, DType::kFloat32, 4),
               b = random_tensor({5}, DType::kFloat32, 5);
  const Tensor m = random_tensor({6, 5}, DType::kFloat32, 6),
               q = random_tensor({2, 3, 4, 6}, DType::kFloat32, 7);
  const Tensor nan_self = Tensor::full({4, 5}, Scalar(NAN), DType::kFloat32);
  const Tensor ln_w = random_tensor({6}, DType::kFloat32, 8);
  const std::vector<Case> cases = {
      {"sum.dim_IntList", {T(xt), L({I(0), I(-1)}), B(true), None()}},
      {"sum", {T(xi), None()}},
      {"mean.dim", {T(x), L({I(1)}), B(false), None()}},
      {"var.correction", {T(xt), L({I(2)}), F(0.0), B(false)}},
      {"std.dim", {T(x), L({I(-1)}), B(true), B(true)}},
      {"amax", {T(xt), L({I(1)}), B(false)}},
      {"max.dim", {T(xt), I(-1), B(true)}},
      {"min", {T(xi)}},
      {"argmin", {T(xt), None(), B(false)}},
      {"softmax.int", {T(xt), I(1), None()}},
      {"_log_softmax", {T(x), I(-1), B(false)}},
      {"mm", {T(x.select(0, 1)), T(m)}},
      {"bmm", {T(x), T(random_tensor({3, 6, 2}, DType::kFloat32, 9))}},
      {"matmul", {T(xt), T(m)}},
      {"matmul", {T(xi.select(0, 0)), T(xi.t())}},
      {"addmm", {T(nan_self), T(x.select(0, 2)), T(m), I(0), F(2.0)}},
      {"addmm", {T(b), T(x.select(0, 2)), T(m), F(0.5), F(2.0)}},
      {"linear", {T(xt), T(w), T(b)}},
      {"linear", {T(x), T(w), None()}},
      {"layer_norm",
       {T(xt), L({I(6)}), None(), T(random_tensor({6}, DType::kFloat32, 10)), F(1e-5), B(true)}},
      {"native_layer_norm", {T(x), L({I(6)}), T(ln_w), T(ln_w), F(1e-5)}},
      {"rms_norm", {T(x), L({I(4), I(6)}), None(), None()}},
      {"_fused_rms_norm", {T(x), L({I(6)}), T(ln_w), F(1e-6)}},
      {"scaled_dot_product_attention",
       {T(q), T(q), T(q), None(), F(0.0), B(true), None(), B(false)}},
      {"_scaled_dot_product_flash_attention_for_cpu",
       {T(q), T(q), T(q), F(0.0), B(false), None(), F(0.5)}},
      {"dropout", {T(xt), F(0.1), B(false)}},
      {"native_dropout", {T(x), F(0.1), B(false)}},
  };
  for (const Case& c : cases) {
    const OpDef* op = Registry::get().find(c.op);
    ASSERT_NE(op, nullptr) << c.op;
    ASSERT_TRUE(op->infer) << c.op << " has the allocation-free path";
    std::vector<Tensor> results = garbage_results(op->infer(c.args));
    cpu_out(*op, c.args, results);
    std::vector<Value> want;
    Value eager = eager_call(*op, c.args);
    if (eager.is_tensor())
      want.push_back(eager);
    else
      want = eager.items;
    ASSERT_EQ(want.size(), results.size()) << c.op;
    for (size_t i = 0; i < results.size(); ++i)
      EXPECT_TRUE(tensor_equal(results[i], want[i].tensor)) << c.op << " result " << i;
  }
}

}  // namespace
}  // namespace inplace::testing
