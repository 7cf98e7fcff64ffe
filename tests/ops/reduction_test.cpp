// sum, mean, var against float64 reference loops written here, over dtypes, dims, strides.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, std::mt19937& g, double lo = -3, double hi = 3) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(g);
    if (dt == DType::kBool)
      v = v > 0;
    else if (!is_floating(dt))
      v = std::round(v);
    if (dt == DType::kUInt8) v = std::fabs(v);
    t.data<double>()[i] = v;
  }
  return t.to(dt);
}

struct Ref {
  Shape shape;
  std::vector<double> values;
};

// Groups x's elements by output position (reduced elements in row-major order) and folds each
// group with f. dims empty = all.
template <typename F>
Ref ref_reduce(const Tensor& x, std::vector<int64_t> dims, bool keepdim, F f) {
  const int64_t nd = x.dim();
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + nd : d] = true;
  Ref r;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[d])
      r.shape.push_back(x.shape()[d]);
    else if (keepdim)
      r.shape.push_back(1);
  std::vector<std::vector<double>> groups(static_cast<size_t>(numel_of(r.shape)));
  const std::vector<double> v = x.to_double_vector();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, out = 0, mul = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t idx = rem % x.shape()[d];
      rem /= x.shape()[d];
      if (!red[d]) {
        out += idx * mul;
        mul *= x.shape()[d];
      }
    }
    groups[out].push_back(v[i]);
  }
  for (auto& grp : groups) r.values.push_back(f(grp));
  return r;
}

double ref_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double ref_mean(const std::vector<double>& g) {
  return ref_sum(g) / static_cast<double>(g.size());
}
double ref_var(const std::vector<double>& g, double correction) {
  const double mu = ref_mean(g);
  double m2 = 0;
  for (double v : g) m2 += (v - mu) * (v - mu);
  return m2 / std::max(0.0, static_cast<double>(g.size()) - correction);
}

double tol_for(DType dt) {
  switch (dt) {
    case DType::kFloat32:
      return 1e-6;
    case DType::kFloat64:
      return 1e-12;
    case DType::kFloat16:
      return 1e-3;
    case DType::kBFloat16:
      return 8e-3;
    default:
      return 0;
  }
}

Value dims_value(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return I(dims[0]);
  return Value::int_list(dims);
}

const std::vector<DType> kAllDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt64,
    DType::kInt32,   DType::kInt16,   DType::kInt8,    DType::kUInt8,    DType::kBool};

TEST(ReductionSum, EveryDTypeAndDimListMatchesReference) {
  std::mt19937 g(1);
  const std::vector<std::vector<int64_t>> dim_sets = {{0}, {-1}, {1}, {0, 2}, {-1, -3}, {2, 0, 1}};
  for (DType dt : kAllDTypes) {
    Tensor x = random_tensor({3, 4, 5}, dt, g);
    const DType want_dt = is_floating(dt) ? dt : DType::kInt64;
    Tensor all = call_t("torch.sum", {T(x)});
    EXPECT_EQ(all.dtype(), want_dt) << dtype_name(dt);
    Ref ra = ref_reduce(x, {}, false, ref_sum);
    EXPECT_TRUE(tensor_near(all, ra.shape, ra.values, tol_for(dt))) << dtype_name(dt);
    for (const auto& dims : dim_sets)
      for (bool keepdim : {false, true}) {
        Tensor got = call_t("torch.sum", {T(x), dims_value(dims)}, {{"keepdim", B(keepdim)}});
        Ref r = ref_reduce(x, dims, keepdim, ref_sum);
        EXPECT_EQ(got.dtype(), want_dt);
        EXPECT_TRUE(tensor_near(got, r.shape, r.values, tol_for(dt)))
            << dtype_name(dt) << " dims " << shape_str(dims) << " keepdim " << keepdim;
      }
  }
}

TEST(ReductionSum, NonContiguousInputs) {
  std::mt19937 g(2);
  Tensor base = random_tensor({6, 8, 5}, DType::kFloat32, g);
  const std::vector<Tensor> views = {base.permute({2, 0, 1}), base.slice(1, 1, 8, 3),
                                     base.transpose(0, 2).slice(0, 0, 5, 2), base.select(1, 3).t(),
                                     base.slice(0, 0, 1).expand({4, 8, 5})};
  for (const Tensor& x : views) {
    for (int64_t d = -x.dim(); d < x.dim(); ++d) {
      Tensor got = call_t("sum", {T(x), I(d)});
      Ref r = ref_reduce(x, {d}, false, ref_sum);
      EXPECT_TRUE(tensor_near(got, r.shape, r.values, 1e-6)) << shape_str(x.shape()) << " " << d;
    }
    Tensor got = call_t("aten.sum.dim_IntList", {T(x), Value::int_list({0, -1}), B(true)});
    Ref r = ref_reduce(x, {0, -1}, true, ref_sum);
    EXPECT_TRUE(tensor_near(got, r.shape, r.values, 1e-6));
  }
}

TEST(ReductionSum, OuterReductionsInBlocks) {
  // Reducing leading dims of a row-major tensor accumulates blocks of 64 adjacent outputs.
  std::mt19937 g(8);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kFloat16}) {
    Tensor x = random_tensor({2, 3, 5, 137}, dt, g);
    for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1}, {0, 2}, {1, 2}}) {
      Ref r = ref_reduce(x, dims, false, ref_sum);
      EXPECT_TRUE(
          tensor_near(call_t("sum", {T(x), dims_value(dims)}), r.shape, r.values, tol_for(dt)))
          << dtype_name(dt) << " " << shape_str(dims);
      if (!is_floating(dt)) continue;
      Ref rm = ref_reduce(x, dims, true, ref_mean);
      EXPECT_TRUE(tensor_near(call_t("mean", {T(x), dims_value(dims), B(true)}), rm.shape,
                              rm.values, tol_for(dt)));
      Ref rv = ref_reduce(x, dims, false,
                          [](const std::vector<double>& grp) { return ref_var(grp, 1); });
      EXPECT_TRUE(tensor_near(call_t("var", {T(x), dims_value(dims)}), rv.shape, rv.values,
                              tol_for(dt) * 10));
    }
  }
}

TEST(ReductionSum, Float32AccumulatesPrecisely) {
  // A float accumulator drifts by ~1e-4 relative here; the double one stays within 1e-6.
  std::mt19937 g(3);
  Tensor x = random_tensor({1 << 20}, DType::kFloat32, g, 1000.0, 1001.0);
  Ref r = ref_reduce(x, {}, false, ref_sum);
  EXPECT_TRUE(tensor_near(call_t("sum", {T(x)}), {}, r.values, 1e-7));
  Tensor m = call_t("mean", {T(x.view({1024, 1024})), I(1)});
  Ref rm = ref_reduce(x.view({1024, 1024}), {1}, false, ref_mean);
  EXPECT_TRUE(tensor_near(m, rm.shape, rm.values, 1e-7));
}

TEST(ReductionSum, EmptyAndZeroDim) {
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  EXPECT_TRUE(tensor_near(call_t("sum", {T(e), I(0)}), {3}, {0, 0, 0}));
  EXPECT_TRUE(tensor_near(call_t("sum", {T(e), I(1)}), {0}, {}));
  EXPECT_TRUE(tensor_near(call_t("sum", {T(e)}), {}, {0}));
  EXPECT_TRUE(tensor_near(call_t("sum", {T(Tensor::empty({0}, DType::kInt32))}), {}, {0}));
  Tensor m = call_t("mean", {T(e), I(0)});
  EXPECT_TRUE(std::isnan(m.at(0)) && std::isnan(m.at(2)));
  Tensor s = Tensor::scalar(Scalar(2.5), DType::kFloat32);
  EXPECT_TRUE(tensor_near(call_t("sum", {T(s), I(0)}), {}, {2.5}));
  EXPECT_TRUE(tensor_near(call_t("sum", {T(s), I(-1), B(true)}), {}, {2.5}));
  // An empty dim list reduces everything, as torch does.
  EXPECT_TRUE(tensor_near(call_t("sum", {T(iota({2, 3})), L({})}), {}, {15}));
}

TEST(ReductionSum, DTypeArgument) {
  Tensor xi = lt({1, 2, 3, 4}, {2, 2});
  Tensor f = call_t("sum", {T(xi), I(1)}, {{"dtype", Value::dtype_value(DType::kFloat64)}});
  EXPECT_EQ(f.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(f, {2}, {3, 7}));
  // float -> int converts each element first (truncation), then sums.
  Tensor xf = ft({1.7f, 2.6f, -1.5f}, {3});
  Tensor i = call_t("sum", {T(xf)}, {{"dtype", Value::dtype_value(DType::kInt64)}});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(i, {}, {2}));
  Tensor i32 = call_t("sum", {T(Tensor::full({3}, Scalar(int64_t{2000000000}), DType::kInt32))},
                      {{"dtype", Value::dtype_value(DType::kInt32)}});
  EXPECT_EQ(i32.dtype(), DType::kInt32);
  EXPECT_EQ(i32.at(0), static_cast<double>(static_cast<int32_t>(6000000000LL)));  // wraps
  Tensor wide = call_t("sum", {T(Tensor::full({3}, Scalar(int64_t{2000000000}), DType::kInt32))});
  EXPECT_EQ(wide.at(0), 6e9);
  Tensor b = call_t("sum", {T(bt({true, false, true, true}, {4}))});
  EXPECT_EQ(b.dtype(), DType::kInt64);
  EXPECT_EQ(b.at(0), 3);
}

TEST(ReductionSum, Errors) {
  Tensor x = iota({2, 3});
  try {
    call("sum", {T(x), Value::int_list({1, -1})});
    FAIL() << "duplicate dims accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[sum] dim 1 appears multiple times"), std::string::npos)
        << e.what();
  }
  try {
    call("sum", {T(x), I(2)});
    FAIL() << "dim out of range accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[sum]"), std::string::npos) << e.what();
  }
}

TEST(ReductionMean, FloatingOnlyAndValues) {
  std::mt19937 g(4);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = random_tensor({4, 3, 6}, dt, g).permute({1, 2, 0});
    for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {-1}, {0, 1}, {}}) {
      Tensor got =
          dims.empty() ? call_t("mean", {T(x)}) : call_t("mean", {T(x), dims_value(dims), B(true)});
      Ref r = ref_reduce(x, dims, !dims.empty(), ref_mean);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_TRUE(tensor_near(got, r.shape, r.values, tol_for(dt))) << dtype_name(dt);
    }
  }
  Tensor xi = lt({1, 2, 3, 4}, {2, 2});
  try {
    call("mean", {T(xi)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[mean]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("int64"), std::string::npos);
  }
  Tensor f = call_t("mean", {T(xi), I(0)}, {{"dtype", Value::dtype_value(DType::kFloat32)}});
  EXPECT_TRUE(tensor_near(f, {2}, {2, 3}));
}

TEST(ReductionVar, OverloadsAndCorrection) {
  std::mt19937 g(5);
  Tensor x = random_tensor({5, 7}, DType::kFloat64, g).t();  // [7,5], non-contiguous
  auto var_c = [](double c) {
    return [c](const std::vector<double>& grp) { return ref_var(grp, c); };
  };
  Ref all1 = ref_reduce(x, {}, false, var_c(1));
  EXPECT_TRUE(tensor_near(call_t("torch.var", {T(x)}), {}, all1.values, 1e-12));
  EXPECT_TRUE(tensor_near(call_t("aten.var.default", {T(x), B(true)}), {}, all1.values, 1e-12));
  Ref all0 = ref_reduce(x, {}, false, var_c(0));
  EXPECT_TRUE(tensor_near(call_t("aten.var.default", {T(x), B(false)}), {}, all0.values, 1e-12));
  // torch.var(x, 1): the int is a dim, not `unbiased`.
  Ref d1 = ref_reduce(x, {1}, false, var_c(1));
  EXPECT_TRUE(tensor_near(call_t("torch.var", {T(x), I(1)}), d1.shape, d1.values, 1e-12));
  Ref d0k = ref_reduce(x, {-2}, true, var_c(0));
  EXPECT_TRUE(
      tensor_near(call_t("var", {T(x), I(-2)}, {{"unbiased", B(false)}, {"keepdim", B(true)}}),
                  d0k.shape, d0k.values, 1e-12));
  for (double c : {0.0, 2.0, 0.5}) {
    Ref r = ref_reduce(x, {0, 1}, false, var_c(c));
    Tensor got =
        call_t("aten.var.correction", {T(x), Value::int_list({0, 1})}, {{"correction", F(c)}});
    EXPECT_TRUE(tensor_near(got, r.shape, r.values, 1e-12)) << c;
  }
  // n - correction <= 0: 0/0 = NaN, x/0 = inf.
  Tensor one = call_t("var", {T(dt({3.0}, {1}))});
  EXPECT_TRUE(std::isnan(one.at(0)));
  Tensor two = call_t("var", {T(dt({1.0, 3.0}, {2}))}, {{"correction", I(5)}});
  EXPECT_TRUE(std::isinf(two.at(0)));
  EXPECT_THROW(call("var", {T(lt({1, 2}, {2}))}), Error);
}

TEST(ReductionVar, StdIsSquareRootOfVar) {
  std::mt19937 g(7);
  Tensor x = random_tensor({4, 6}, DType::kFloat32, g).t();
  auto std_c = [](double c) {
    return [c](const std::vector<double>& grp) { return std::sqrt(ref_var(grp, c)); };
  };
  Ref all = ref_reduce(x, {}, false, std_c(1));
  EXPECT_TRUE(tensor_near(call_t("torch.std", {T(x)}), {}, all.values, 1e-6));
  Ref d = ref_reduce(x, {1}, true, std_c(0));
  EXPECT_TRUE(tensor_near(call_t("std", {T(x), I(1)}, {{"correction", I(0)}, {"keepdim", B(true)}}),
                          d.shape, d.values, 1e-6));
  Ref d0 = ref_reduce(x, {0}, false, std_c(1));
  EXPECT_TRUE(
      tensor_near(call_t("aten.std.dim", {T(x), Value::int_list({0})}), d0.shape, d0.values, 1e-6));
  EXPECT_THROW(call("std", {T(lt({1, 2}, {2}))}), Error);
}

TEST(ReductionVar, Float32LargeOffsetStaysAccurate) {
  std::mt19937 g(6);
  Tensor x = random_tensor({64, 4096}, DType::kFloat32, g, 1e4, 1e4 + 1.0);
  Ref r = ref_reduce(x, {1}, false, [](const std::vector<double>& grp) { return ref_var(grp, 1); });
  Tensor got = call_t("var", {T(x), I(1)});
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.at(i), r.values[i], 1e-6 * r.values[i]) << i;
}

TEST(ReductionOps, InferWorksOnMetas) {
  const OpDef* op = Registry::get().find("sum.dim_IntList");
  ASSERT_NE(op, nullptr);
  std::vector<Tensor> m = op->infer(
      {T(Tensor::meta({2, 3, 4}, DType::kInt32)), Value::int_list({-1, 0}), B(true), None()});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(m[0].dtype(), DType::kInt64);
  const OpDef* mx = Registry::get().find("max.dim");
  ASSERT_NE(mx, nullptr);
  m = mx->infer({T(Tensor::meta({2, 3}, DType::kFloat16)), I(0), B(false)});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].shape(), (Shape{3}));
  EXPECT_EQ(m[0].dtype(), DType::kFloat16);
  EXPECT_EQ(m[1].dtype(), DType::kInt64);
}

}  // namespace
}  // namespace inplace::testing
