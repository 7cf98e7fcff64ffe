// View ops through the registry, as graphs call them: every FX spelling, varargs, results that
// share storage, strides and offsets, meta inputs, and errors.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<Tensor> tensors_of(const Value& v) {
  EXPECT_EQ(v.kind, Value::Kind::kList);
  std::vector<Tensor> out;
  for (const Value& x : v.items) out.push_back(x.as_tensor("test"));
  return out;
}

const int64_t kEnd = std::numeric_limits<int64_t>::max();

}  // namespace

TEST(ViewOps, ViewAndReshapeSpellings) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(call_t("view", {T(x), I(6), I(4)}), x, {6, 4}, {4, 1}, 0));  // varargs
  EXPECT_TRUE(is_view(call_t("view", {T(x), I(-1)}), x, {24}, {1}, 0));
  EXPECT_TRUE(is_view(call_t("aten.view.default", {T(x), L({I(4), I(-1)})}), x, {4, 6}, {6, 1}, 0));
  EXPECT_TRUE(is_view(call_t("reshape", {T(x), Tup({I(2), I(-1)})}), x, {2, 12}, {12, 1}, 0));
  EXPECT_TRUE(is_view(call_t("torch.reshape", {T(x), Tup({I(-1), I(2)})}), x, {12, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("reshape", {T(x), I(24)}), x, {24}, {1}, 0));
  EXPECT_TRUE(is_view(call_t("view_as", {T(x), T(iota({3, 8}))}), x, {3, 8}, {8, 1}, 0));
  EXPECT_TRUE(is_view(call_t("reshape_as", {T(x), T(iota({8, 3}))}), x, {8, 3}, {3, 1}, 0));
  EXPECT_TRUE(
      is_view(call_t("aten._unsafe_view.default", {T(x), L({I(6), I(4)})}), x, {6, 4}, {4, 1}, 0));
  // size is also a keyword.
  EXPECT_TRUE(is_view(call_t("view", {T(x)}, {{"size", L({I(24)})}}), x, {24}, {1}, 0));
}

TEST(ViewOps, ViewOfTransposedErrorsButReshapeCopies) {
  Tensor x = iota({2, 3});
  Tensor xt = call_t("t", {T(x)});
  EXPECT_TRUE(mentions(error_of([&] {
                         call("view", {T(xt), I(-1)});
                       }),
                       {"[view]", "[6]", "[3,2]", "reshape"}));
  Tensor r = call_t("reshape", {T(xt), I(-1)});
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_TRUE(tensor_near(r, {6}, {0, 3, 1, 4, 2, 5}));
  Tensor f = call_t("torch.flatten", {T(xt)});
  EXPECT_FALSE(f.same_storage(x));
  EXPECT_TRUE(tensor_near(f, {6}, {0, 3, 1, 4, 2, 5}));
  Tensor ra = call_t("reshape_as", {T(xt), T(iota({6}))});
  EXPECT_TRUE(tensor_near(ra, {6}, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(mentions(error_of([&] { call("view_as", {T(xt), T(iota({6}))}); }), {"[view]"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("reshape", {T(x), L({I(4), I(-1)})});
                       }),
                       {"[reshape]", "[4,-1]", "size 6"}));
}

TEST(ViewOps, ReshapeAndFlattenOutPathCopies) {
  // The engine's path (infer + out) for the ops that may copy: always a fresh result.
  for (const char* name : {"reshape", "flatten.using_ints", "_unsafe_view", "reshape_as"}) {
    const OpDef* op = Registry::get().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->kind, OpKind::kFunctional) << name;
    ASSERT_TRUE(op->infer && op->out) << name;
  }
  Tensor x = iota({3, 4}).t();  // [4,3], not viewable as [12]
  const OpDef* reshape = Registry::get().find("reshape");
  Args args = {T(x), L({I(2), I(-1)})};
  std::vector<Tensor> metas = reshape->infer(args);
  ASSERT_EQ(metas.size(), 1u);
  EXPECT_TRUE(metas[0].is_meta());
  EXPECT_EQ(metas[0].shape(), (Shape{2, 6}));
  Tensor out = Tensor::full({2, 6}, Scalar(-1.0), DType::kFloat32);
  reshape->out(args, {out});
  EXPECT_TRUE(tensor_near(out, {2, 6}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));

  const OpDef* flatten = Registry::get().find("flatten.using_ints");
  Args fargs = {T(iota({2, 3, 2}).permute({2, 0, 1})), I(1), I(-1)};  // [2,2,3] -> [2,6]
  EXPECT_EQ(flatten->infer(fargs)[0].shape(), (Shape{2, 6}));
  Tensor fout = Tensor::empty({2, 6}, DType::kFloat32);
  flatten->out(fargs, {fout});
  EXPECT_TRUE(tensor_near(fout, {2, 6}, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
}

TEST(ViewOps, PermuteTransposeFamily) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(call_t("permute", {T(x), I(2), I(0), I(1)}), x, {4, 2, 3}, {1, 12, 4}, 0));
  EXPECT_TRUE(is_view(call_t("aten.permute.default", {T(x), L({I(-1), I(0), I(-2)})}), x, {4, 2, 3},
                      {1, 12, 4}, 0));
  EXPECT_TRUE(is_view(call_t("torch.permute", {T(x), Tup({I(1), I(0), I(2)})}), x, {3, 2, 4},
                      {4, 12, 1}, 0));
  EXPECT_TRUE(is_view(call_t("transpose", {T(x), I(0), I(-1)}), x, {4, 3, 2}, {1, 4, 12}, 0));
  EXPECT_TRUE(
      is_view(call_t("aten.transpose.int", {T(x), I(1), I(2)}), x, {2, 4, 3}, {12, 1, 4}, 0));
  EXPECT_TRUE(is_view(call_t("swapaxes", {T(x), I(0), I(1)}), x, {3, 2, 4}, {4, 12, 1}, 0));
  EXPECT_TRUE(is_view(call_t("swapdims", {T(x), I(-1), I(-2)}), x, {2, 4, 3}, {12, 1, 4}, 0));
  Tensor m = iota({3, 5});
  EXPECT_TRUE(is_view(call_t("aten.t.default", {T(m)}), m, {5, 3}, {1, 5}, 0));
  EXPECT_TRUE(mentions(error_of([&] { call("t", {T(x)}); }), {"[t]"}));
  // movedim: the moved dims land at their destinations, the rest keep their order.
  Tensor y = iota({2, 3, 4, 5});  // strides [60,20,5,1]
  EXPECT_TRUE(is_view(call_t("movedim", {T(y), I(0), I(-1)}), y, {3, 4, 5, 2}, {20, 5, 1, 60}, 0));
  EXPECT_TRUE(
      is_view(call_t("torch.moveaxis", {T(y), I(3), I(1)}), y, {2, 5, 3, 4}, {60, 1, 20, 5}, 0));
  EXPECT_TRUE(is_view(call_t("movedim", {T(y), Tup({I(0), I(1)}), Tup({I(3), I(0)})}), y,
                      {3, 4, 5, 2}, {20, 5, 1, 60}, 0));
  EXPECT_TRUE(is_view(call_t("aten.movedim.intlist", {T(y), L({I(2), I(0)}), L({I(0), I(2)})}), y,
                      {4, 3, 2, 5}, {5, 20, 60, 1}, 0));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("movedim", {T(y), L({I(0), I(0)}), L({I(1), I(2)})});
                       }),
                       {"[movedim]", "repeated"}));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("movedim", {T(y), L({I(0), I(1)}), L({I(1)})});
                       }),
                       {"[movedim]", "[0,1]", "[1]"}));
  EXPECT_TRUE(mentions(error_of([&] { call("permute", {T(x), I(0), I(1)}); }), {"[permute]"}));
}

TEST(ViewOps, SliceSelectNarrow) {
  Tensor x = iota({4, 10});
  // aten.slice.Tensor as make_fx writes it: end = INT64_MAX.
  EXPECT_TRUE(
      is_view(call_t("aten.slice.Tensor", {T(x), I(1), I(2), I(kEnd)}), x, {4, 8}, {10, 1}, 2));
  EXPECT_TRUE(is_view(call_t("slice", {T(x), I(1), I(1), I(9), I(3)}), x, {4, 3}, {10, 3}, 1));
  EXPECT_TRUE(is_view(call_t("slice", {T(x), I(-1), I(-4), None()}), x, {4, 4}, {10, 1}, 6));
  EXPECT_TRUE(is_view(call_t("slice", {T(x)}, {{"start", I(-3)}, {"end", I(-1)}}), x, {2, 10},
                      {10, 1}, 10));
  EXPECT_TRUE(is_view(call_t("slice", {T(x), I(0), None(), None(), I(2)}), x, {2, 10}, {20, 1}, 0));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("slice", {T(x), I(0), I(0), I(4), I(0)});
                       }),
                       {"[slice]", "step"}));
  EXPECT_TRUE(is_view(call_t("aten.select.int", {T(x), I(0), I(-1)}), x, {10}, {1}, 30));
  EXPECT_TRUE(is_view(call_t("select", {T(x), I(-1), I(7)}), x, {4}, {10}, 7));
  // An index given as a 0-dim integer tensor (a traced SymInt).
  EXPECT_TRUE(
      is_view(call_t("select", {T(x), I(1), T(Tensor::scalar(Scalar(int64_t{2}), DType::kInt64))}),
              x, {4}, {10}, 2));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("select", {T(x), I(0), I(4)});
                       }),
                       {"[select]", "index 4", "size 4"}));
  EXPECT_TRUE(is_view(call_t("narrow", {T(x), I(1), I(-3), I(2)}), x, {4, 2}, {10, 1}, 7));
  EXPECT_TRUE(is_view(call_t("torch.narrow", {T(x), I(0), I(1), I(2)}), x, {2, 10}, {10, 1}, 10));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("narrow", {T(x), I(0), I(3), I(2)});
                       }),
                       {"[narrow]", "size 4"}));
}

TEST(ViewOps, ExpandSqueezeUnsqueeze) {
  Tensor x = iota({3, 1});
  EXPECT_TRUE(is_view(call_t("expand", {T(x), I(2), I(-1), I(4)}), x, {2, 3, 4}, {0, 1, 0}, 0));
  EXPECT_TRUE(
      is_view(call_t("aten.expand.default", {T(x), L({I(3), I(5)})}, {{"implicit", B(true)}}), x,
              {3, 5}, {1, 0}, 0));
  EXPECT_TRUE(is_view(call_t("expand_as", {T(x), T(iota({2, 3, 2}))}), x, {2, 3, 2}, {0, 1, 0}, 0));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("expand", {T(x), I(4), I(2)});
                       }),
                       {"[expand]", "[3,1]", "[4,2]"}));
  Tensor y = iota({2, 3});
  EXPECT_TRUE(is_view(call_t("unsqueeze", {T(y), I(-1)}), y, {2, 3, 1}, {3, 1, 1}, 0));
  EXPECT_TRUE(is_view(call_t("torch.unsqueeze", {T(y), I(1)}), y, {2, 1, 3}, {3, 3, 1}, 0));
  Tensor z = iota({1, 3, 1, 2});
  EXPECT_TRUE(is_view(call_t("squeeze", {T(z)}), z, {3, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("squeeze", {T(z), I(-2)}), z, {1, 3, 2}, {6, 2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("aten.squeeze.dim", {T(z), I(1)}), z, {1, 3, 1, 2}, {6, 2, 2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("aten.squeeze.dims", {T(z), L({I(0), I(2)})}), z, {3, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("squeeze", {T(z), Tup({I(0), I(-2)})}), z, {3, 2}, {2, 1}, 0));
  EXPECT_TRUE(is_view(call_t("aten.squeeze.default", {T(z)}), z, {3, 2}, {2, 1}, 0));
}

TEST(ViewOps, FlattenUnflattenDiagonalAsStrided) {
  Tensor x = iota({2, 3, 4});
  EXPECT_TRUE(is_view(call_t("flatten", {T(x), I(1)}), x, {2, 12}, {12, 1}, 0));
  EXPECT_TRUE(
      is_view(call_t("aten.flatten.using_ints", {T(x), I(0), I(-2)}), x, {6, 4}, {4, 1}, 0));
  EXPECT_TRUE(is_view(call_t("unflatten", {T(x), I(-1), Tup({I(2), I(-1)})}), x, {2, 3, 2, 2},
                      {12, 4, 2, 1}, 0));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("unflatten", {T(x), I(1), L({})});
                       }),
                       {"[unflatten]", "non-empty"}));
  Tensor m = iota({3, 4});
  EXPECT_TRUE(is_view(call_t("diagonal", {T(m)}), m, {3}, {5}, 0));
  EXPECT_TRUE(is_view(call_t("diagonal", {T(m), I(-1)}), m, {2}, {5}, 4));
  // Over dims (2, 0) of [2,3,4] with offset 1: length min(4, 2 - 1), starting at x[1, :, 0].
  EXPECT_TRUE(
      is_view(call_t("aten.diagonal.default", {T(x), I(1), I(-1), I(0)}), x, {3, 1}, {4, 13}, 12));
  EXPECT_TRUE(is_view(call_t("as_strided", {T(m), L({I(2), I(2)}), L({I(4), I(2)})}), m, {2, 2},
                      {4, 2}, 0));
  EXPECT_TRUE(is_view(call_t("aten.as_strided.default", {T(m), L({I(3)}), L({I(3)}), I(2)}), m, {3},
                      {3}, 2));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("as_strided", {T(m), L({I(4)}), L({I(4)}), I(1)});
                       }),
                       {"[as_strided]", "12 elements"}));
}

TEST(ViewOps, SplitsReturnListsOfViews) {
  Tensor x = iota({5, 4});
  auto parts = tensors_of(call("split", {T(x), I(2)}));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(is_view(parts[2], x, {1, 4}, {4, 1}, 16));
  auto by_list = tensors_of(call("torch.split", {T(x), L({I(1), I(3)}), I(1)}));
  ASSERT_EQ(by_list.size(), 2u);
  EXPECT_TRUE(is_view(by_list[1], x, {5, 3}, {4, 1}, 1));
  auto aten_split = tensors_of(call("aten.split.Tensor", {T(x), I(3), I(-1)}));
  ASSERT_EQ(aten_split.size(), 2u);
  EXPECT_TRUE(is_view(aten_split[1], x, {5, 1}, {4, 1}, 3));
  auto sws = tensors_of(call("aten.split_with_sizes.default", {T(x), L({I(2), I(0), I(3)})}));
  ASSERT_EQ(sws.size(), 3u);
  EXPECT_TRUE(is_view(sws[2], x, {3, 4}, {4, 1}, 8));
  EXPECT_TRUE(mentions(error_of([&] {
                         call("split_with_sizes", {T(x), L({I(2), I(2)})});
                       }),
                       {"[split_with_sizes]", "[2,2]", "size 5"}));
  auto ch = tensors_of(call("chunk", {T(x), I(2), I(1)}));
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_TRUE(is_view(ch[1], x, {5, 2}, {4, 1}, 2));
  auto ub = tensors_of(call("aten.unbind.int", {T(x), I(-1)}));
  ASSERT_EQ(ub.size(), 4u);
  EXPECT_TRUE(is_view(ub[3], x, {5}, {4}, 3));
  auto ub0 = tensors_of(call("torch.unbind", {T(x)}));
  ASSERT_EQ(ub0.size(), 5u);
  EXPECT_TRUE(is_view(ub0[4], x, {4}, {1}, 16));
  // Splits are views: writing a piece writes the base.
  ub[0].fill(Scalar(-1.0));
  EXPECT_EQ(x.at(0), -1);
  EXPECT_EQ(x.at(16), -1);
  EXPECT_EQ(x.at(1), 1);
}

TEST(ViewOps, WritesThroughViewsReachTheBaseAndBack) {
  Tensor x = iota({4, 6});
  Tensor v = call_t("slice", {T(call_t("t", {T(x)})), I(0), I(1), None(), I(2)});  // cols 1,3,5
  EXPECT_TRUE(is_view(v, x, {3, 4}, {2, 6}, 1));
  v.fill(Scalar(0.0));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(x.at(i), (i % 2 == 1) ? 0.0 : double(i)) << i;
  Tensor d = call_t("diagonal", {T(call_t("view", {T(x), I(6), I(4)}))});
  Tensor sel = call_t("select", {T(x), I(0), I(2)});
  x.copy_from(Tensor::full({}, Scalar(3.0), DType::kFloat32));
  EXPECT_TRUE(tensor_near(d, {4}, {3, 3, 3, 3}));
  EXPECT_TRUE(tensor_near(sel, {6}, {3, 3, 3, 3, 3, 3}));
  sel.copy_from(iota({6}));
  EXPECT_TRUE(tensor_near(call_t("narrow", {T(x), I(0), I(2), I(1)}), {1, 6}, {0, 1, 2, 3, 4, 5}));
  Tensor e = call_t("expand", {T(call_t("unsqueeze", {T(sel), I(0)})), I(3), I(6)});
  EXPECT_TRUE(tensor_near(e.select(0, 2), {6}, {0, 1, 2, 3, 4, 5}));
}

TEST(ViewOps, RegisteredAsViewsAndRunOnMetas) {
  for (const char* name :
       {"view",           "view_as",          "permute",      "transpose.int", "t",
        "swapaxes",       "swapdims",         "slice.Tensor", "select.int",    "narrow",
        "expand",         "expand_as",        "unsqueeze",    "squeeze",       "squeeze.dim",
        "squeeze.dims",   "unflatten.int",    "diagonal",     "as_strided",    "split.Tensor",
        "split.sizes",    "split_with_sizes", "chunk",        "unbind.int",    "movedim.int",
        "movedim.intlist"}) {
    const OpDef* op = Registry::get().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->kind, OpKind::kView) << name;
    EXPECT_TRUE(op->schema.is_view()) << name;
  }
  Tensor m = Tensor::meta({2, 3, 4}, DType::kFloat16);
  Tensor mt = m.transpose(0, 2);  // [4,3,2], not viewable flat
  struct Case {
    const char* target;
    std::vector<Value> args;
    Shape shape;
  };
  std::vector<Case> cases = {
      {"view", {T(m), I(-1)}, {24}},
      {"reshape", {T(mt), I(-1)}, {24}},
      {"flatten", {T(mt), I(0), I(1)}, {12, 2}},
      {"permute", {T(m), I(1), I(2), I(0)}, {3, 4, 2}},
      {"transpose", {T(m), I(0), I(1)}, {3, 2, 4}},
      {"slice", {T(m), I(2), I(1), I(kEnd), I(2)}, {2, 3, 2}},
      {"select", {T(m), I(1), I(-1)}, {2, 4}},
      {"narrow", {T(m), I(2), I(0), I(3)}, {2, 3, 3}},
      {"expand", {T(m), I(2), I(2), I(3), I(4)}, {2, 2, 3, 4}},
      {"unsqueeze", {T(m), I(0)}, {1, 2, 3, 4}},
      {"squeeze", {T(m)}, {2, 3, 4}},
      {"unflatten", {T(m), I(1), L({I(3), I(1)})}, {2, 3, 1, 4}},
      {"diagonal", {T(m), I(0), I(1), I(2)}, {2, 3}},
      {"as_strided", {T(m), L({I(4)}), L({I(2)})}, {4}},
      {"movedim", {T(m), I(0), I(2)}, {3, 4, 2}},
      {"_unsafe_view", {T(mt), L({I(6), I(4)})}, {6, 4}},
  };
  for (const Case& c : cases) {
    Tensor r = call_t(c.target, c.args);
    EXPECT_TRUE(r.is_meta()) << c.target;
    EXPECT_EQ(r.shape(), c.shape) << c.target;
    EXPECT_EQ(r.dtype(), DType::kFloat16) << c.target;
  }
  for (const Tensor& t : tensors_of(call("split", {T(m), I(2), I(2)}))) EXPECT_TRUE(t.is_meta());
  for (const Tensor& t : tensors_of(call("unbind", {T(m), I(1)}))) EXPECT_TRUE(t.is_meta());
}

TEST(ViewOps, SizeDimNumelReturnNumbers) {
  Tensor x = iota({2, 3, 4});
  Value all = call("size", {T(x)});
  ASSERT_EQ(all.kind, Value::Kind::kTuple);
  EXPECT_EQ(all.items.size(), 3u);
  EXPECT_EQ(all.items[2].kind, Value::Kind::kInt);
  EXPECT_EQ(all.items[2].i, 4);
  Value one = call("torch.Tensor.size", {T(x), I(1)});
  ASSERT_EQ(one.kind, Value::Kind::kInt);
  EXPECT_EQ(one.i, 3);
  EXPECT_EQ(call("size", {T(x)}, {{"dim", I(-1)}}).i, 4);
  EXPECT_EQ(call("aten.sym_size.int", {T(x), I(0)}).i, 2);
  EXPECT_EQ(call("aten.sym_size.default", {T(x)}).items.size(), 3u);
  EXPECT_EQ(call("dim", {T(x)}).i, 3);
  EXPECT_EQ(call("ndimension", {T(x)}).i, 3);
  EXPECT_EQ(call("numel", {T(x)}).i, 24);
  EXPECT_EQ(call("torch.numel", {T(x)}).i, 24);
  EXPECT_EQ(call("aten.sym_numel.default", {T(x)}).i, 24);
  // Shape queries run on metas too.
  EXPECT_EQ(call("size", {T(Tensor::meta({7, 5}, DType::kInt8)), I(0)}).i, 7);
  Tensor s = Tensor::scalar(Scalar(1.0), DType::kFloat32);
  EXPECT_EQ(call("size", {T(s)}).items.size(), 0u);
  EXPECT_EQ(call("numel", {T(s)}).i, 1);
  EXPECT_TRUE(mentions(error_of([&] { call("size", {T(s), I(0)}); }), {"[size]", "dim 0"}));
  EXPECT_TRUE(mentions(error_of([&] { call("size", {T(x), I(3)}); }), {"[size]", "dim 3"}));
}
