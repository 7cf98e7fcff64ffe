#include <gtest/gtest.h>

#include <cmath>

#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

TEST(ElementwiseCopy, ToDTypeConvertsLikeTorch) {
  Tensor x = ft({2.7f, -2.7f, 0, 300}, {4});
  Tensor r = call_t("to", {T(x), Dt(DType::kInt64)});  // x.to(torch.int64)
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {4}, {2, -2, 0, 300}));  // truncation toward zero
  r = call_t("to", {T(x), Dt(DType::kBool)});
  EXPECT_TRUE(tensor_near(r, {4}, {1, 1, 0, 1}));
  r = call_t("to", {T(x), Dt(DType::kFloat16)});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_TRUE(tensor_near(
      r, {4}, {rounded(2.7f, DType::kFloat16), rounded(-2.7f, DType::kFloat16), 0, 300}));
  r = call_t("aten.to.dtype", {T(x), S("torch.bfloat16")});
  EXPECT_EQ(r.dtype(), DType::kBFloat16);
  // every dtype pair against the float64 reference (values exact in all of them); a negative
  // float into uint8 is undefined in C++ (and in torch), so that pair is left out
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      if (is_floating(from) && to == DType::kUInt8) continue;
      Tensor src = sample({2, 3}, from, 71);
      Tensor got = call_t("to", {T(src), Dt(to)});
      ASSERT_EQ(got.dtype(), to);
      std::vector<double> want = ref_unary(src, [&](double v) {
        if (to == DType::kBool) return double(v != 0);
        if (is_floating(to)) return v;
        v = std::trunc(v);                                 // float -> int truncates toward zero
        if (to == DType::kUInt8 && v < 0) return v + 256;  // int -> uint8 wraps
        return v;
      });
      EXPECT_TRUE(tensor_near(got, {2, 3}, want)) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST(ElementwiseCopy, ToSameDTypeIsAnAliasUnlessCopy) {
  Tensor x = ft({1, 2}, {2});
  Tensor r = call_t("to", {T(x), Dt(DType::kFloat32)});
  EXPECT_TRUE(r.same_view(x));
  r = call_t("to", {T(x), Dt(DType::kFloat32)}, {{"copy", B(true)}});
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_TRUE(tensor_near(r, {2}, {1, 2}));
  // device forms: the data stays where it is
  EXPECT_TRUE(call_t("to", {T(x), S("cpu")}).same_view(x));
  EXPECT_TRUE(call_t("to", {T(x), Value::device("cpu")}).same_view(x));
  EXPECT_TRUE(call_t("to", {T(x)}, {{"device", S("cpu")}}).same_view(x));
  r = call_t("to", {T(x), S("cpu"), Dt(DType::kFloat64)});
  EXPECT_EQ(r.dtype(), DType::kFloat64);
  r = call_t("to", {T(x)}, {{"dtype", Dt(DType::kInt32)}, {"device", S("cpu")}});
  EXPECT_EQ(r.dtype(), DType::kInt32);
  r = call_t("aten.to.dtype_layout", {T(x)}, {{"dtype", Dt(DType::kFloat16)}});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  r = call_t("to", {T(x), T(lt({0}, {1}))});  // to(other)
  EXPECT_EQ(r.dtype(), DType::kInt64);
  std::string msg = error_of([&] { call("to", {T(x), S("flaot32")}); });
  EXPECT_TRUE(contains(msg, "[to]") && contains(msg, "flaot32")) << msg;
}

TEST(ElementwiseCopy, CastMethodsAndTypeAs) {
  Tensor x = ft({1.5f, -2.5f}, {2});
  struct Case {
    const char* method;
    DType dtype;
    std::vector<double> values;
  };
  const Case cases[] = {
      {"float", DType::kFloat32, {1.5, -2.5}}, {"double", DType::kFloat64, {1.5, -2.5}},
      {"half", DType::kFloat16, {1.5, -2.5}},  {"bfloat16", DType::kBFloat16, {1.5, -2.5}},
      {"long", DType::kInt64, {1, -2}},        {"int", DType::kInt32, {1, -2}},
      {"short", DType::kInt16, {1, -2}},       {"char", DType::kInt8, {1, -2}},
      {"bool", DType::kBool, {1, 1}},
  };
  for (const Case& c : cases) {
    Tensor r = call_t(c.method, {T(x)});
    EXPECT_EQ(r.dtype(), c.dtype) << c.method;
    EXPECT_TRUE(tensor_near(r, {2}, c.values)) << c.method;
  }
  EXPECT_TRUE(call_t("float", {T(x)}).same_view(x));
  EXPECT_TRUE(tensor_near(call_t("byte", {T(lt({1, -1}, {2}))}), {2}, {1, 255}));
  Tensor r = call_t("type_as", {T(x), T(lt({0}, {1}))});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {2}, {1, -2}));
  EXPECT_TRUE(call_t("type_as", {T(x), T(ft({0}, {1}))}).same_view(x));
  r = call_t("type", {T(x), S("torch.HalfTensor")});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_TRUE(tensor_near(r, {2}, {1.5, -2.5}));
  EXPECT_EQ(call_t("type", {T(x), Dt(DType::kInt32)}).dtype(), DType::kInt32);
  EXPECT_TRUE(call_t("type", {T(x), S("torch.cuda.FloatTensor")}).same_view(x));
  EXPECT_TRUE(contains(error_of([&] { call("type", {T(x)}); }), "[type]"));
  r = call_t("aten._to_copy.default", {T(x)}, {{"dtype", Dt(DType::kFloat64)}});
  EXPECT_EQ(r.dtype(), DType::kFloat64);
  r = call_t("_to_copy", {T(x)});
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_EQ(r.dtype(), DType::kFloat32);
}

TEST(ElementwiseCopy, NonContiguousSourcesBecomeContiguous) {
  Tensor base = sample({3, 4}, DType::kFloat32, 72);
  Tensor t = base.t();
  Tensor r = call_t("to", {T(t), Dt(DType::kFloat64)});
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_TRUE(tensor_near(r, {4, 3}, t.to_double_vector()));
  r = call_t("clone", {T(t)});
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_FALSE(r.same_storage(base));
  EXPECT_TRUE(tensor_near(r, {4, 3}, t.to_double_vector()));
  r = call_t("contiguous", {T(t)});
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_FALSE(r.same_storage(base));
  EXPECT_TRUE(tensor_near(r, {4, 3}, t.to_double_vector()));
  EXPECT_TRUE(call_t("contiguous", {T(base)}).same_view(base));
  r = call_t("aten.lift_fresh_copy.default", {T(base)});
  EXPECT_FALSE(r.same_storage(base));
  EXPECT_TRUE(tensor_near(r, {3, 4}, base.to_double_vector()));
}

TEST(ElementwiseCopy, AliasOpsShareStorage) {
  Tensor x = ft({1, 2}, {2});
  for (const char* op : {"detach", "alias", "aten.lift_fresh.default"}) {
    Tensor r = call_t(op, {T(x)});
    EXPECT_TRUE(r.same_view(x)) << op;
  }
  const OpDef* detach = Registry::get().find("detach");
  ASSERT_NE(detach, nullptr);
  EXPECT_EQ(detach->kind, OpKind::kView);
  EXPECT_TRUE(detach->schema.is_view());
}

TEST(ElementwiseCopy, CopyFunctionalBroadcastsAndCasts) {
  Tensor self = lt({0, 0, 0, 0, 0, 0}, {2, 3});
  Tensor src = ft({1.9f, -2.5f, 3}, {3});
  Tensor r = call_t("aten.copy.default", {T(self), T(src)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {2, 3}, {1, -2, 3, 1, -2, 3}));
  EXPECT_TRUE(tensor_near(self, {2, 3}, {0, 0, 0, 0, 0, 0}));  // functional
  std::string msg = error_of([&] { call("copy", {T(self), T(ft({1, 2}, {2}))}); });
  EXPECT_TRUE(contains(msg, "[copy]") && contains(msg, "[2]") && contains(msg, "[2,3]")) << msg;
}

TEST(ElementwiseCopy, CopyInPlace) {
  Tensor cache = Tensor::zeros({2, 4}, DType::kFloat16);
  void* p = cache.data_ptr();
  Tensor k = ft({1.5f, -2.5f}, {2, 1});
  Value r = call("copy_", {T(cache.slice(1, 2, 3)), T(k)});  // cache[:, 2:3] = k (converts)
  EXPECT_EQ(cache.data_ptr(), p);
  EXPECT_TRUE(tensor_near(cache, {2, 4}, {0, 0, 1.5, 0, 0, 0, -2.5, 0}));
  EXPECT_TRUE(r.tensor.same_storage(cache));
  // broadcast src into a transposed destination
  Tensor dst = Tensor::zeros({3, 2}, DType::kInt32);
  call("aten.copy_.default", {T(dst.t()), T(lt({7, 8, 9}, {3}))});
  EXPECT_TRUE(tensor_near(dst, {3, 2}, {7, 7, 8, 8, 9, 9}));
  // overlapping source and destination: shift right by one, like torch (staged)
  Tensor seq = ft({1, 2, 3, 4, 5}, {5});
  call("copy_", {T(seq.slice(0, 1, 5)), T(seq.slice(0, 0, 4))});
  EXPECT_TRUE(tensor_near(seq, {5}, {1, 1, 2, 3, 4}));
  // a shape that does not broadcast into self names both shapes
  std::string msg = error_of([&] { call("copy_", {T(dst), T(lt({1, 2, 3, 4}, {4}))}); });
  EXPECT_TRUE(contains(msg, "[copy_]") && contains(msg, "[4]") && contains(msg, "[3,2]")) << msg;
  // copy_ into bool: nonzero -> true
  Tensor b = bt({false, false}, {2});
  call("copy_", {T(b), T(ft({0.5f, 0}, {2}))});
  EXPECT_TRUE(tensor_near(b, {2}, {1, 0}));
  const OpDef* def = Registry::get().find("copy_");
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->kind, OpKind::kMutating);
  EXPECT_EQ(def->functional, "copy");
}

TEST(ElementwiseCopy, FillAndZero) {
  Tensor x = ft({1, 2, 3, 4}, {2, 2});
  Tensor r = call_t("aten.fill.Scalar", {T(x), F(7.5)});
  EXPECT_TRUE(tensor_near(r, {2, 2}, {7.5, 7.5, 7.5, 7.5}));
  EXPECT_TRUE(tensor_near(x, {2, 2}, {1, 2, 3, 4}));
  r = call_t("fill", {T(lt({1, 2}, {2})), T(Tensor::scalar(Scalar(3.9), DType::kFloat64))});
  EXPECT_TRUE(tensor_near(r, {2}, {3, 3}));
  call("fill_", {T(x.t().select(0, 1))}, {{"value", I(-1)}});  // column 1
  EXPECT_TRUE(tensor_near(x, {2, 2}, {1, -1, 3, -1}));
  call("aten.fill_.Tensor", {T(x), T(Tensor::scalar(Scalar(2), DType::kInt64))});
  EXPECT_TRUE(tensor_near(x, {2, 2}, {2, 2, 2, 2}));
  r = call_t("zero", {T(x)});
  EXPECT_TRUE(tensor_near(r, {2, 2}, {0, 0, 0, 0}));
  EXPECT_TRUE(tensor_near(x, {2, 2}, {2, 2, 2, 2}));
  void* p = x.data_ptr();
  Value z = call("zero_", {T(x.slice(0, 1, 2))});
  EXPECT_EQ(x.data_ptr(), p);
  EXPECT_TRUE(tensor_near(x, {2, 2}, {2, 2, 0, 0}));
  EXPECT_TRUE(z.tensor.same_storage(x));
  std::string msg = error_of([&] { call("fill_", {T(x), T(ft({1, 2}, {2}))}); });
  EXPECT_TRUE(contains(msg, "fill") && contains(msg, "0-dimensional") && contains(msg, "[2]"))
      << msg;
  // empty tensors
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  call("fill_", {T(e), I(1)});
  EXPECT_EQ(call_t("clone", {T(e)}).shape(), (Shape{0, 3}));
  EXPECT_EQ(call_t("to", {T(e), Dt(DType::kInt8)}).shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace inplace::testing
