// amax/amin, max/min (values + indices), argmax/argmin against reference loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

// Small integer values so ties are common (first occurrence must win).
Tensor tie_tensor(const Shape& s, DType dt, std::mt19937& g) {
  std::uniform_int_distribution<int> u(0, 4);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = dt == DType::kBool ? u(g) % 2 : u(g);
  return t.to(dt);
}

struct Ref {
  Shape shape;
  std::vector<double> values, indices;
};

// Reference: walk the reduced elements in row-major order; strictly better or first NaN wins.
Ref ref_extreme(const Tensor& x, std::vector<int64_t> dims, bool keepdim, bool is_max) {
  const int64_t nd = x.dim();
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + nd : d] = true;
  Ref r;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[d])
      r.shape.push_back(x.shape()[d]);
    else if (keepdim)
      r.shape.push_back(1);
  const size_t n_out = static_cast<size_t>(numel_of(r.shape));
  r.values.assign(n_out, 0);
  r.indices.assign(n_out, -1);
  std::vector<int64_t> count(n_out, 0);
  const std::vector<double> v = x.to_double_vector();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, out = 0, mul = 1, pos = 0, pmul = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t idx = rem % x.shape()[d];
      rem /= x.shape()[d];
      if (!red[d]) {
        out += idx * mul;
        mul *= x.shape()[d];
      } else {
        pos += idx * pmul;
        pmul *= x.shape()[d];
      }
    }
    const double cur = r.values[out];
    bool take = count[out]++ == 0;
    if (!take && !std::isnan(cur)) take = std::isnan(v[i]) || (is_max ? v[i] > cur : v[i] < cur);
    if (take) {
      r.values[out] = v[i];
      r.indices[out] = static_cast<double>(pos);
    }
  }
  return r;
}

const std::vector<DType> kAllDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt64,
    DType::kInt32,   DType::kInt16,   DType::kInt8,    DType::kUInt8,    DType::kBool};

TEST(ReductionExtreme, AmaxAminEveryDType) {
  std::mt19937 g(11);
  for (DType dt : kAllDTypes) {
    Tensor x = tie_tensor({4, 3, 5}, dt, g).permute({2, 0, 1});
    for (bool is_max : {true, false}) {
      const char* op = is_max ? "torch.amax" : "torch.amin";
      for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {0}, {-1}, {0, 2}}) {
        for (bool keepdim : {false, true}) {
          Tensor got = dims.empty() ? call_t(op, {T(x)}, {{"keepdim", B(keepdim)}})
                                    : call_t(op, {T(x), Value::int_list(dims), B(keepdim)});
          Ref r = ref_extreme(x, dims, keepdim, is_max);
          EXPECT_EQ(got.dtype(), dt);
          EXPECT_TRUE(tensor_near(got, r.shape, r.values, 0)) << op << " " << dtype_name(dt);
        }
      }
    }
  }
}

TEST(ReductionExtreme, MaxDimValuesAndFirstIndex) {
  std::mt19937 g(12);
  for (DType dt : kAllDTypes) {
    Tensor x = tie_tensor({6, 9}, dt, g).slice(1, 1, 9, 2);  // [6,4], step slice
    for (bool is_max : {true, false}) {
      for (int64_t d : {0, 1, -1}) {
        for (bool keepdim : {false, true}) {
          Value res =
              call(is_max ? "torch.max" : "torch.min", {T(x), I(d)}, {{"keepdim", B(keepdim)}});
          ASSERT_EQ(res.kind, Value::Kind::kTuple);
          ASSERT_EQ(res.items.size(), 2u);
          Ref r = ref_extreme(x, {d}, keepdim, is_max);
          EXPECT_TRUE(tensor_near(res.items[0].tensor, r.shape, r.values, 0)) << dtype_name(dt);
          EXPECT_EQ(res.items[1].tensor.dtype(), DType::kInt64);
          EXPECT_TRUE(tensor_near(res.items[1].tensor, r.shape, r.indices, 0)) << dtype_name(dt);
        }
      }
      Tensor all = call_t(is_max ? "aten.max.default" : "aten.min.default", {T(x)});
      Ref r = ref_extreme(x, {}, false, is_max);
      EXPECT_TRUE(tensor_near(all, {}, r.values, 0));
    }
  }
}

TEST(ReductionExtreme, OuterReductionsInBlocks) {
  std::mt19937 g(14);
  for (DType dt : {DType::kFloat32, DType::kInt64, DType::kBFloat16, DType::kBool}) {
    Tensor x = tie_tensor({4, 3, 150}, dt, g);
    for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1}, {0, 1}}) {
      for (bool is_max : {true, false}) {
        Ref r = ref_extreme(x, dims, false, is_max);
        EXPECT_TRUE(tensor_near(call_t(is_max ? "amax" : "amin", {T(x), Value::int_list(dims)}),
                                r.shape, r.values, 0));
        if (dims.size() != 1) continue;
        Value res = call(is_max ? "max" : "min", {T(x), I(dims[0])});
        EXPECT_TRUE(tensor_near(res.items[0].tensor, r.shape, r.values, 0));
        EXPECT_TRUE(tensor_near(res.items[1].tensor, r.shape, r.indices, 0)) << dtype_name(dt);
        if (dt == DType::kBool) continue;
        EXPECT_TRUE(tensor_near(call_t(is_max ? "argmax" : "argmin", {T(x), I(dims[0])}), r.shape,
                                r.indices, 0));
      }
    }
  }
  Tensor nanx = Tensor::full({5, 70}, Scalar(1.0), DType::kFloat32);
  nanx.select(0, 3).select(0, 65).fill(Scalar(NAN));
  nanx.select(0, 4).select(0, 65).fill(Scalar(NAN));
  nanx.select(0, 2).select(0, 1).fill(Scalar(7.0));
  Value res = call("max", {T(nanx), I(0)});
  EXPECT_TRUE(std::isnan(res.items[0].tensor.at(65)));
  EXPECT_EQ(res.items[1].tensor.at(65), 3);
  EXPECT_EQ(res.items[0].tensor.at(1), 7);
  EXPECT_EQ(res.items[1].tensor.at(1), 2);
  EXPECT_EQ(res.items[1].tensor.at(0), 0);  // all ties: the first
}

TEST(ReductionExtreme, ArgmaxFlattensAndKeepsDims) {
  std::mt19937 g(13);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt32, DType::kUInt8}) {
    Tensor x = tie_tensor({3, 4, 5}, dt, g).transpose(0, 2);  // [5,4,3]
    for (bool is_max : {true, false}) {
      const char* op = is_max ? "argmax" : "argmin";
      Ref all = ref_extreme(x, {}, false, is_max);
      Tensor flat = call_t(op, {T(x)});
      EXPECT_EQ(flat.dtype(), DType::kInt64);
      EXPECT_TRUE(tensor_near(flat, {}, all.indices, 0));
      EXPECT_TRUE(
          tensor_near(call_t(op, {T(x)}, {{"keepdim", B(true)}}), {1, 1, 1}, all.indices, 0));
      for (int64_t d : {0, 1, -1}) {
        Ref r = ref_extreme(x, {d}, true, is_max);
        EXPECT_TRUE(tensor_near(call_t(op, {T(x), I(d), B(true)}), r.shape, r.indices, 0));
      }
    }
  }
}

TEST(ReductionExtreme, NaNWinsAtFirstOccurrence) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = ft({1.f, static_cast<float>(nan), 7.f, static_cast<float>(nan), -2.f, 3.f}, {2, 3});
  Tensor mx = call_t("amax", {T(x), I(1)});
  EXPECT_TRUE(std::isnan(mx.at(0)) && std::isnan(mx.at(1)));
  EXPECT_TRUE(tensor_near(call_t("argmax", {T(x), I(1)}), {2}, {1, 0}, 0));
  EXPECT_TRUE(tensor_near(call_t("argmin", {T(x), I(1)}), {2}, {1, 0}, 0));
  EXPECT_TRUE(tensor_near(call_t("argmax", {T(x)}), {}, {1}, 0));
  EXPECT_TRUE(tensor_near(call_t("argmin", {T(x), I(0)}), {3}, {1, 0, 1}, 0));
  EXPECT_TRUE(std::isnan(call_t("max", {T(x)}).at(0)));
  EXPECT_TRUE(std::isnan(call_t("min", {T(x)}).at(0)));
  // -inf / inf compare normally.
  Tensor inf = ft({-INFINITY, 2.f, INFINITY}, {3});
  EXPECT_TRUE(tensor_near(call_t("argmax", {T(inf)}), {}, {2}, 0));
  EXPECT_TRUE(tensor_near(call_t("argmin", {T(inf)}), {}, {0}, 0));
}

// Long rows take the vector path (lanes, then the first occurrence's bits where they are
// unique): bitwise the element loop on rows of every length around the lanes' width, with a
// zero of either sign as the best, NaNs of different payloads, infinities and ties.
TEST(ReductionExtreme, LongRowsBitwiseTheElementLoop) {
  std::mt19937 g(21);
  std::normal_distribution<float> nd;
  auto nan_with = [](uint32_t payload) {
    uint32_t bits = 0x7fc00000u | payload;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  auto bits_of = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  for (int64_t n : {1, 15, 31, 32, 33, 47, 48, 63, 64, 65, 200, 1000}) {
    for (int pattern = 0; pattern < 7; ++pattern) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& f : v) f = nd(g);
      std::uniform_int_distribution<int64_t> at(0, n - 1);
      switch (pattern) {
        case 1:  // zeros of both signs and negatives: the best is the first zero's sign
          for (float& f : v) f = g() % 3 == 0 ? (g() % 2 ? -0.0f : 0.0f) : -std::abs(f) - 1;
          v[static_cast<size_t>(at(g))] = g() % 2 ? -0.0f : 0.0f;
          break;
        case 2:  // two NaNs of different payloads
          v[static_cast<size_t>(at(g))] = nan_with(5);
          v[static_cast<size_t>(at(g))] = nan_with(9);
          break;
        case 3:
          v[static_cast<size_t>(at(g))] = INFINITY;
          v[static_cast<size_t>(at(g))] = -INFINITY;
          break;
        case 4:  // every element -inf (a masked row)
          for (float& f : v) f = -INFINITY;
          break;
        case 5:  // ties
          for (float& f : v) f = static_cast<float>(g() % 4) - 1.5f;
          break;
        case 6:  // positive zeros only, then one negative zero first
          for (float& f : v) f = 0.0f;
          v[0] = -0.0f;
          break;
      }
      Tensor x = ft(v, {1, n});
      for (bool is_max : {true, false}) {
        float best = v[0];
        for (float f : v)
          if (!std::isnan(best) && (std::isnan(f) || (is_max ? f > best : f < best))) best = f;
        const float got = call_t(is_max ? "amax" : "amin", {T(x), I(-1)}).data<float>()[0];
        EXPECT_EQ(bits_of(got), bits_of(best))
            << "n " << n << " pattern " << pattern << (is_max ? " amax " : " amin ") << got;
      }
    }
  }
}

TEST(ReductionExtreme, EmptyReductionsError) {
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  auto expect_error = [](const std::function<void()>& f, const std::string& op) {
    try {
      f();
      ADD_FAILURE() << op << " accepted an empty reduction";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("[" + op + "]"), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("[0,3]"), std::string::npos) << err.what();
    }
  };
  expect_error([&] { call("amax", {T(e)}); }, "amax");
  expect_error([&] { call("amin", {T(e), I(0)}); }, "amin");
  expect_error([&] { call("max", {T(e)}); }, "max");
  expect_error([&] { call("min", {T(e), I(0)}); }, "min");
  expect_error([&] { call("argmax", {T(e)}); }, "argmax");
  expect_error([&] { call("argmin", {T(e), I(-2)}); }, "argmin");
  // Reducing a non-empty dim of an empty tensor is fine: the result is empty.
  EXPECT_TRUE(tensor_near(call_t("amax", {T(e), I(1)}), {0}, {}));
  Value r = call("max", {T(e), I(1)});
  EXPECT_EQ(r.items[1].tensor.shape(), (Shape{0}));
  EXPECT_THROW(call("argmax", {T(bt({true, false}, {2}))}), Error);
}

TEST(ReductionExtreme, ZeroDimInput) {
  Tensor s = Tensor::scalar(Scalar(4.0), DType::kFloat64);
  EXPECT_TRUE(tensor_near(call_t("amax", {T(s)}), {}, {4}));
  EXPECT_TRUE(tensor_near(call_t("argmax", {T(s), I(0)}), {}, {0}));
  Value r = call("max", {T(s), I(-1), B(true)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {}, {4}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {}, {0}));
}

// torch.max(a, b) / torch.min(a, b) are elementwise (NaN propagates, broadcasting), while
// torch.max(x, 1) stays the dim reduction returning (values, indices).
TEST(ReductionExtreme, MaxMinOfTwoTensorsAreElementwise) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = Tensor::from_vector<float>({1, 5, -2, 0, 7, 3}, {2, 3});
  Tensor b = Tensor::from_vector<float>({4, 2, static_cast<float>(nan)}, {3});
  EXPECT_TRUE(tensor_near(call_t("torch.max", {T(a), T(b)}), {2, 3}, {4, 5, nan, 4, 7, nan}));
  EXPECT_TRUE(tensor_near(call_t("torch.min", {T(a), T(b)}), {2, 3}, {1, 2, nan, 0, 2, nan}));
  EXPECT_TRUE(tensor_near(call_t("max", {T(a), T(b)}), {2, 3}, {4, 5, nan, 4, 7, nan}));
  Value r = call("torch.max", {T(a), Value::integer(1)});
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {2}, {5, 7}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {2}, {1, 1}));
  EXPECT_THROW(call("torch.max", {T(a), T(Tensor::from_vector<float>({1, 2}, {2}))}), Error);
}

}  // namespace
}  // namespace inplace::testing
