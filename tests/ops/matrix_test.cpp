// mm, bmm, matmul, addmm, linear against float64 reference loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-2, 2);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(g);
    // 8-bit products stay in range so the reference needs no wrapping.
    if (dt == DType::kInt8)
      v = std::round(v);
    else if (dt == DType::kUInt8)
      v = std::fabs(std::round(v));
    else if (!is_floating(dt))
      v = std::round(v * 3);
    t.data<double>()[i] = v;
  }
  return t.to(dt);
}

// Element of t at a (right-aligned, broadcast) multi-index of a larger shape.
double bget(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  const size_t lead = idx.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d)
    flat = flat * t.shape()[d] + (t.shape()[d] == 1 ? 0 : idx[lead + d]);
  return t.at(flat);
}

// torch.matmul from its definition: promote 1-D operands, broadcast batch dims, drop the unit
// dims again.
struct Ref {
  Shape shape;
  std::vector<double> values;
};
Ref ref_matmul(const Tensor& a0, const Tensor& b0) {
  const Tensor a = a0.dim() == 1 ? a0.unsqueeze(0) : a0;
  const Tensor b = b0.dim() == 1 ? b0.unsqueeze(1) : b0;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2), "ref");
  Ref r;
  r.shape = batch;
  if (a0.dim() > 1) r.shape.push_back(m);
  if (b0.dim() > 1) r.shape.push_back(n);
  const int64_t nb = numel_of(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    std::vector<int64_t> idx(batch.size() + 2);
    int64_t rem = bi;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      idx[d] = rem % batch[d];
      rem /= batch[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          idx[batch.size()] = i;
          idx[batch.size() + 1] = p;
          const double av = bget(a, idx);
          idx[batch.size()] = p;
          idx[batch.size() + 1] = j;
          s += av * bget(b, idx);
        }
        r.values.push_back(s);
      }
  }
  return r;
}

double tol_for(DType dt) {
  switch (dt) {
    case DType::kFloat32:
      return 1e-5;
    case DType::kFloat64:
      return 1e-12;
    case DType::kFloat16:
      return 2e-3;
    case DType::kBFloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

const std::vector<DType> kDTypes = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                    DType::kBFloat16, DType::kInt64,   DType::kInt32,
                                    DType::kInt8,     DType::kUInt8};

TEST(Matrix, MmEveryDTypeAndLayout) {
  std::mt19937 g(31);
  for (DType dt : kDTypes) {
    Tensor a = random_tensor({5, 7}, dt, g), b = random_tensor({7, 3}, dt, g);
    Tensor at = random_tensor({7, 5}, dt, g).t();  // transposed contiguous: gemm Trans
    Tensor as = random_tensor({5, 13}, dt, g).slice(1, 0, 13, 2);  // column step: packed
    Tensor bt = random_tensor({3, 7}, dt, g).t();
    for (const Tensor& x : {a, at, as})
      for (const Tensor& y : {b, bt}) {
        Tensor got = call_t("torch.mm", {T(x), T(y)});
        Ref r = ref_matmul(x, y);
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_TRUE(tensor_near(got, r.shape, r.values, tol_for(dt))) << dtype_name(dt);
      }
  }
}

TEST(Matrix, IntegerOverflowWrapsLikeTorch) {
  Tensor a = Tensor::full({1, 2}, Scalar(100), DType::kInt8);
  Tensor b = Tensor::full({2, 1}, Scalar(1), DType::kInt8);
  EXPECT_TRUE(tensor_near(call_t("mm", {T(a), T(b)}), {1, 1}, {-56}, 0));
  Tensor big = Tensor::full({1, 2}, Scalar(int64_t{1} << 62), DType::kInt64);
  Tensor two = Tensor::full({2, 1}, Scalar(2), DType::kInt64);
  EXPECT_EQ(static_cast<int64_t>(call_t("mm", {T(big), T(two)}).at(0)), 0);  // 2^64 wraps to 0
}

TEST(Matrix, MatmulEveryBroadcastCase) {
  std::mt19937 g(32);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4}, {4}},
      {{4}, {4, 3}},
      {{5, 4}, {4}},
      {{2, 5, 4}, {4}},
      {{4}, {2, 4, 3}},
      {{5, 4}, {4, 3}},
      {{2, 5, 4}, {4, 3}},
      {{5, 4}, {2, 4, 3}},
      {{2, 1, 5, 4}, {3, 4, 6}},
      {{1, 5, 4}, {3, 4, 2}},
      {{3, 2, 5, 4}, {3, 2, 4, 1}},
      {{1, 4}, {4, 1}},
      {{2, 3, 1, 4}, {4}},
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kFloat16}) {
    for (const auto& [sa, sb] : cases) {
      Tensor a = random_tensor(sa, dt, g), b = random_tensor(sb, dt, g);
      Tensor got = call_t("torch.matmul", {T(a), T(b)});
      Ref r = ref_matmul(a, b);
      EXPECT_TRUE(tensor_near(got, r.shape, r.values, tol_for(dt)))
          << dtype_name(dt) << " " << shape_str(sa) << " @ " << shape_str(sb);
    }
  }
  // Operator spellings reach matmul too.
  Tensor a = random_tensor({3, 4}, DType::kFloat32, g),
         b = random_tensor({4, 2}, DType::kFloat32, g);
  Ref r = ref_matmul(a, b);
  EXPECT_TRUE(tensor_near(call_t("_operator.matmul", {T(a), T(b)}), r.shape, r.values, 1e-5));
  EXPECT_TRUE(tensor_near(call_t("__matmul__", {T(a), T(b)}), r.shape, r.values, 1e-5));
  EXPECT_TRUE(tensor_near(call_t("aten.matmul.default", {T(a), T(b)}), r.shape, r.values, 1e-5));
}

TEST(Matrix, MatmulNonContiguousBatches) {
  std::mt19937 g(33);
  Tensor base = random_tensor({4, 3, 6}, DType::kFloat32, g);
  Tensor a = base.permute({1, 0, 2});                        // [3,4,6]: rows don't fold
  Tensor w = random_tensor({5, 6}, DType::kFloat32, g).t();  // [6,5] transposed
  Tensor b3 = random_tensor({3, 5, 6}, DType::kFloat32, g).transpose(1, 2);    // [3,6,5]
  Tensor ex = random_tensor({1, 6, 5}, DType::kFloat32, g).expand({3, 6, 5});  // stride-0 batch
  for (const Tensor& b : {w, b3, ex}) {
    Ref r = ref_matmul(a, b);
    EXPECT_TRUE(tensor_near(call_t("matmul", {T(a), T(b)}), r.shape, r.values, 1e-5))
        << shape_str(b.shape());
  }
  Tensor bm = call_t("bmm", {T(a), T(b3)});
  Ref rb = ref_matmul(a, b3);
  EXPECT_TRUE(tensor_near(bm, rb.shape, rb.values, 1e-5));
  // Large enough that BLAS takes its blocked path.
  Tensor big_a = random_tensor({2, 70, 130}, DType::kFloat32, g);
  Tensor big_b = random_tensor({130, 90}, DType::kFloat32, g);
  Ref rbig = ref_matmul(big_a, big_b);
  EXPECT_TRUE(tensor_near(call_t("matmul", {T(big_a), T(big_b)}), rbig.shape, rbig.values, 1e-4));
}

TEST(Matrix, EmptyDims) {
  for (DType dt : {DType::kFloat32, DType::kInt32}) {
    Tensor a = Tensor::empty({3, 0}, dt), b = Tensor::empty({0, 2}, dt);
    EXPECT_TRUE(tensor_near(call_t("mm", {T(a), T(b)}), {3, 2}, {0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(call_t("mm", {T(Tensor::empty({0, 4}, dt)), T(Tensor::empty({4, 2}, dt))}).shape(),
              (Shape{0, 2}));
    EXPECT_TRUE(tensor_near(
        call_t("matmul", {T(Tensor::empty({0}, dt)), T(Tensor::empty({0}, dt))}), {}, {0}));
    EXPECT_EQ(
        call_t("bmm", {T(Tensor::empty({0, 2, 3}, dt)), T(Tensor::empty({0, 3, 4}, dt))}).shape(),
        (Shape{0, 2, 4}));
  }
}

TEST(Matrix, ShapeAndDTypeErrors) {
  Tensor a = iota({2, 3}), b = iota({4, 5});
  std::string e = error_of([&] { call("mm", {T(a), T(b)}); });
  EXPECT_NE(e.find("[mm] mat1 [2,3] and mat2 [4,5] cannot be multiplied"), std::string::npos) << e;
  e = error_of([&] { call("mm", {T(iota({2, 3, 1})), T(b)}); });
  EXPECT_NE(e.find("[mm]"), std::string::npos) << e;
  EXPECT_NE(e.find("[2,3,1]"), std::string::npos) << e;
  e = error_of([&] { call("bmm", {T(iota({2, 2, 3})), T(iota({3, 3, 4}))}); });
  EXPECT_NE(e.find("[bmm] batch1 [2,2,3] and batch2 [3,3,4]"), std::string::npos) << e;
  e = error_of([&] { call("matmul", {T(iota({2, 5, 3})), T(iota({3, 4, 2}))}); });
  EXPECT_NE(e.find("[matmul] self [2,5,3] and other [3,4,2] cannot be multiplied"),
            std::string::npos)
      << e;
  e = error_of([&] { call("matmul", {T(iota({2, 5, 3})), T(iota({3, 3, 2}))}); });
  EXPECT_NE(e.find("[matmul] self [2,5,3] and other [3,3,2]"), std::string::npos) << e;
  e = error_of([&] { call("matmul", {T(iota({})), T(iota({3}))}); });
  EXPECT_NE(e.find("[matmul]"), std::string::npos) << e;
  e = error_of([&] { call("mm", {T(iota({2, 3})), T(iota({3, 2}, DType::kFloat64))}); });
  EXPECT_NE(e.find("[mm]"), std::string::npos) << e;
  EXPECT_NE(e.find("float32 and float64"), std::string::npos) << e;
  e = error_of([&] { call("mm", {T(iota({2, 2}, DType::kBool)), T(iota({2, 2}, DType::kBool))}); });
  EXPECT_NE(e.find("[mm] not implemented for bool"), std::string::npos) << e;
  e = error_of([&] { call("linear", {T(iota({2, 3})), T(iota({4, 5}))}); });
  EXPECT_NE(e.find("[linear] input [2,3] and weight [4,5] cannot be multiplied"), std::string::npos)
      << e;
  e = error_of([&] { call("addmm", {T(iota({3})), T(iota({2, 4})), T(iota({4, 5}))}); });
  EXPECT_NE(e.find("[addmm]"), std::string::npos) << e;
}

TEST(Matrix, AddmmBetaAlpha) {
  std::mt19937 g(34);
  Tensor m1 = random_tensor({4, 6}, DType::kFloat64, g),
         m2 = random_tensor({6, 3}, DType::kFloat64, g);
  Ref p = ref_matmul(m1, m2);
  for (const Shape& self_shape : {Shape{4, 3}, Shape{3}, Shape{4, 1}, Shape{}}) {
    Tensor self = random_tensor(self_shape, DType::kFloat64, g);
    Tensor got =
        call_t("torch.addmm", {T(self), T(m1), T(m2)}, {{"beta", F(0.5)}, {"alpha", F(-2.0)}});
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j)
        want.push_back(0.5 * bget(self, {i, j}) - 2.0 * p.values[i * 3 + j]);
    EXPECT_TRUE(tensor_near(got, {4, 3}, want, 1e-12)) << shape_str(self_shape);
  }
  // beta = 0 ignores self, NaN included.
  Tensor nan_self = Tensor::full({4, 3}, Scalar(NAN), DType::kFloat64);
  Tensor z = call_t("addmm", {T(nan_self), T(m1), T(m2)}, {{"beta", I(0)}});
  EXPECT_TRUE(tensor_near(z, {4, 3}, p.values, 1e-12));
  // Integers: alpha/beta must be integral.
  Tensor i1 = lt({1, 2, 3, 4}, {2, 2});
  Tensor ig =
      call_t("addmm", {T(lt({10, 20}, {2})), T(i1), T(i1)}, {{"beta", I(2)}, {"alpha", I(3)}});
  EXPECT_TRUE(tensor_near(ig, {2, 2}, {20 + 21, 40 + 30, 20 + 45, 40 + 66}, 0));
  EXPECT_THROW(call("addmm", {T(i1), T(i1), T(i1)}, {{"alpha", F(0.5)}}), Error);
  // Half: accumulate in float, round once.
  Tensor h1 = m1.to(DType::kFloat16), h2 = m2.to(DType::kFloat16);
  Tensor hs = Tensor::full({4, 3}, Scalar(1.0), DType::kFloat16);
  Ref hp = ref_matmul(h1, h2);
  std::vector<double> hw;
  for (double v : hp.values) hw.push_back(v + 1.0);
  EXPECT_TRUE(tensor_near(call_t("addmm", {T(hs), T(h1), T(h2)}), {4, 3}, hw, 2e-3));
}

TEST(Matrix, LinearWithAndWithoutBias) {
  std::mt19937 g(35);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt32}) {
    Tensor x = random_tensor({2, 3, 6}, dt, g), w = random_tensor({4, 6}, dt, g),
           b = random_tensor({4}, dt, g);
    Ref r = ref_matmul(x, w.t());
    Tensor nb = call_t("torch.nn.functional.linear", {T(x), T(w)});
    EXPECT_TRUE(tensor_near(nb, {2, 3, 4}, r.values, tol_for(dt))) << dtype_name(dt);
    std::vector<double> wb = r.values;
    for (size_t i = 0; i < wb.size(); ++i) wb[i] += b.at(static_cast<int64_t>(i % 4));
    Tensor yb = call_t("torch.nn.functional.linear", {T(x), T(w)}, {{"bias", T(b)}});
    EXPECT_TRUE(tensor_near(yb, {2, 3, 4}, wb, tol_for(dt))) << dtype_name(dt);
  }
  // Non-contiguous input, 1-D input, 1-D weight.
  Tensor x = random_tensor({6, 5}, DType::kFloat32, g).t();  // [5,6]
  Tensor w = random_tensor({3, 6}, DType::kFloat32, g);
  Ref r = ref_matmul(x, w.t());
  EXPECT_TRUE(tensor_near(call_t("aten.linear.default", {T(x), T(w)}), {5, 3}, r.values, 1e-5));
  Tensor v = random_tensor({6}, DType::kFloat32, g);
  Ref rv = ref_matmul(v, w.t());
  EXPECT_TRUE(tensor_near(call_t("linear", {T(v), T(w)}), {3}, rv.values, 1e-5));
  Tensor w1 = random_tensor({6}, DType::kFloat32, g);
  Ref r1 = ref_matmul(x, w1);
  Tensor y1 = call_t("linear", {T(x), T(w1), T(Tensor::scalar(Scalar(1.0), DType::kFloat32))});
  std::vector<double> w1b;
  for (double val : r1.values) w1b.push_back(val + 1);
  EXPECT_TRUE(tensor_near(y1, {5}, w1b, 1e-5));
}

TEST(Matrix, DotAndMv) {
  Tensor a = dt({1, 2, 3}, {3}), b = dt({4, 5, 6}, {3});
  EXPECT_TRUE(tensor_near(call_t("torch.dot", {T(a), T(b)}), {}, {32}));
  Tensor m = dt({1, 0, 0, 0, 1, 1}, {2, 3});
  EXPECT_TRUE(tensor_near(call_t("mv", {T(m), T(b)}), {2}, {4, 11}));
  EXPECT_THROW(call("dot", {T(m), T(b)}), Error);
}

TEST(Matrix, InferOnMetas) {
  const OpDef* op = Registry::get().find("matmul");
  ASSERT_NE(op, nullptr);
  auto m = op->infer({T(Tensor::meta({7, 1, 5, 4}, DType::kFloat32)),
                      T(Tensor::meta({3, 4, 2}, DType::kFloat32))});
  EXPECT_EQ(m[0].shape(), (Shape{7, 3, 5, 2}));
  m = op->infer(
      {T(Tensor::meta({4}, DType::kFloat32)), T(Tensor::meta({2, 4, 3}, DType::kFloat32))});
  EXPECT_EQ(m[0].shape(), (Shape{2, 3}));
  m = Registry::get().find("linear")->infer({T(Tensor::meta({2, 8, 16}, DType::kFloat32)),
                                             T(Tensor::meta({32, 16}, DType::kFloat32)), None()});
  EXPECT_EQ(m[0].shape(), (Shape{2, 8, 32}));
}

}  // namespace
}  // namespace inplace::testing
