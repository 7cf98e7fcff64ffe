// einsum against a float64 reference written here that enumerates every assignment of the
// labels (explicit, letters only); ellipsis and implicit-output equations are checked against
// the letter equation they stand for. Covers contractions, batch dims, outer products,
// diagonals, sums, size-1 broadcasting, 1-3 operands, strided and empty operands, dtypes,
// errors, the FX spellings (varargs and list) and the compiled engine's out path.
#include <gtest/gtest.h>

#include <map>

#include "compiler/differential.h"
#include "elementwise_test_util.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

// out[rhs] = sum over the other labels of prod_i op_i[term_i]; a dim of size 1 broadcasts.
std::vector<double> ref_einsum(const std::string& eq, const std::vector<Tensor>& ops,
                               Shape* out_shape) {
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) {
      const int64_t od = ops[i].shape()[d];
      auto it = size.find(terms[i][d]);
      if (it == size.end())
        size[terms[i][d]] = od;
      else if (it->second == 1)
        it->second = od;
    }
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  out_shape->clear();
  for (char c : rhs) out_shape->push_back(size[c]);
  std::vector<double> out(static_cast<size_t>(numel_of(*out_shape)), 0);
  std::map<char, int64_t> at;
  for (char c : labels) {
    at[c] = 0;
    if (size[c] == 0) return out;
  }
  while (true) {
    double prod = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t flat = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        const int64_t sd = ops[i].shape()[d];
        flat = flat * sd + (sd == 1 ? 0 : at[terms[i][d]]);
      }
      prod *= ops[i].at(flat);
    }
    int64_t o = 0;
    for (char c : rhs) o = o * size[c] + at[c];
    out[static_cast<size_t>(o)] += prod;
    size_t k = labels.size();
    while (k > 0 && ++at[labels[k - 1]] == size[labels[k - 1]]) at[labels[--k]] = 0;
    if (k == 0) return out;
  }
}

// Same values layout as sample(), but a non-contiguous view: reversed storage, permuted back.
Tensor strided_sample(const Shape& s, DType dt, uint32_t seed) {
  if (s.size() <= 1) {
    const int64_t n = s.empty() ? 1 : s[0];
    Tensor t = sample({2 * n}, dt, seed).slice(0, 0, 2 * n, 2);
    return s.empty() ? t.reshape({}) : t;
  }
  Shape rev(s.rbegin(), s.rend());
  std::vector<int64_t> perm;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) perm.push_back(d);
  return sample(rev, dt, seed).permute(perm);
}

struct Case {
  std::string eq;       // what einsum gets
  std::string letters;  // the explicit, letters-only equation it means ("" = eq)
  std::vector<Shape> shapes;
};

const std::vector<Case> kCases = {
    {"ij,jk->ik", "", {{3, 4}, {4, 5}}},
    {"ij,jk->ki", "", {{3, 4}, {4, 5}}},
    {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},
    {"bhqd,bhkd->bhqk", "", {{2, 3, 4, 5}, {2, 3, 6, 5}}},
    {"bhqk,bhkd->bhqd", "", {{2, 3, 4, 6}, {2, 3, 6, 5}}},
    {"bqhd,bkhd->bhqk", "", {{2, 4, 3, 5}, {2, 6, 3, 5}}},
    {"bhqk,bkhd->bqhd", "", {{2, 3, 4, 6}, {2, 6, 3, 5}}},
    {"bik,bkj->ibj", "", {{2, 3, 4}, {2, 4, 5}}},
    {"ijk,kl->jil", "", {{2, 3, 4}, {4, 5}}},
    {"ijk,kl->lij", "", {{2, 3, 4}, {4, 5}}},
    {"bi,bj->ijb", "", {{2, 3}, {2, 4}}},
    {"b i j, b j k -> b i k", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
    {"i,j->ij", "", {{3}, {4}}},
    {"bi,bj->bij", "", {{2, 3}, {2, 4}}},
    {"ij,jk->ijk", "", {{2, 3}, {3, 4}}},
    {"ij,ij->ij", "", {{3, 4}, {3, 4}}},
    {"ij,ij->", "", {{3, 4}, {3, 4}}},
    {"i,i->", "", {{5}, {5}}},
    {"i,i", "i,i->", {{5}, {5}}},
    {"ijk,jil->kl", "", {{2, 3, 4}, {3, 2, 5}}},
    {"abc,cd->abd", "", {{2, 3, 4}, {4, 5}}},
    {"ab,cd->abcd", "", {{2, 3}, {2, 2}}},
    {"ij,kj->ik", "", {{3, 1}, {2, 4}}},
    {"ij,jk,kl->il", "", {{2, 3}, {3, 4}, {4, 5}}},
    {"bn,anm,bm->ba", "", {{2, 3}, {4, 3, 5}, {2, 5}}},
    {"ij,jk,kl", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
    {"ii->i", "", {{4, 4}}},
    {"ii", "ii->", {{4, 4}}},
    {"iij->j", "", {{3, 3, 2}}},
    {"ij->ji", "", {{3, 4}}},
    {"ij->", "", {{3, 4}}},
    {"ij->j", "", {{3, 4}}},
    {"Ba", "Ba->Ba", {{2, 3}}},
    {"aB", "aB->Ba", {{2, 3}}},
    {"iji,jk->k", "", {{3, 2, 3}, {2, 4}}},
    {"...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 1, 3, 4}, {5, 4, 6}}},
    {"...ij,...jk", "xyij,yjk->xyik", {{2, 1, 3, 4}, {5, 4, 6}}},
    {"...ij->ij", "xij->ij", {{2, 3, 4}}},
    {"i...->...", "ixy->xy", {{3, 2, 4}}},
    {"...ii->...i", "xii->xi", {{2, 3, 3}}},
    {"b...d,b...d->b...", "bxd,bxd->bx", {{2, 3, 4}, {2, 3, 4}}},
    {"...,...->...", "xy,y->xy", {{2, 3}, {3}}},
    {"ij...,jk->ik", "ijx,jk->ik", {{2, 3, 4}, {3, 5}}},
};

void check_case(const Case& c, DType dt, bool strided) {
  SCOPED_TRACE(str_cat(c.eq, " ", dtype_name(dt), strided ? " strided" : ""));
  std::vector<Tensor> ops;
  std::vector<Value> args{S(c.eq)};
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    const uint32_t seed = static_cast<uint32_t>(i + 1);
    ops.push_back(strided ? strided_sample(c.shapes[i], dt, seed) : sample(c.shapes[i], dt, seed));
    args.push_back(T(ops.back()));
  }
  Shape shape;
  const std::vector<double> want = ref_einsum(c.letters.empty() ? c.eq : c.letters, ops, &shape);
  const Tensor got = call_t("torch.einsum", args);
  // Half types round each intermediate product; the reference does not.
  const double tol = dt == DType::kFloat16   ? 3e-2
                     : dt == DType::kFloat32 ? 1e-5
                     : dt == DType::kFloat64 ? 1e-12
                                             : 0;
  EXPECT_TRUE(tensor_near(got, shape, want, tol));
}

TEST(EinsumOps, ValuesEveryCase) {
  for (const Case& c : kCases) {
    check_case(c, DType::kFloat32, false);
    check_case(c, DType::kFloat32, true);
    check_case(c, DType::kFloat64, true);
  }
}

TEST(EinsumOps, IntegerAndHalfOperands) {
  for (const Case& c : kCases) {
    check_case(c, DType::kInt64, false);
    check_case(c, DType::kInt32, true);
    check_case(c, DType::kFloat16, false);
  }
}

TEST(EinsumOps, ResultDtypes) {
  const Tensor a = sample({2, 3}, DType::kInt8, 1);
  // Products keep the operands' dtype; a single integral operand that is summed gives int64
  // (torch.sum's rule, which torch's einsum uses there).
  EXPECT_EQ(
      call_t("torch.einsum", {S("ij,jk->ik"), T(a), T(sample({3, 2}, DType::kInt8, 2))}).dtype(),
      DType::kInt8);
  EXPECT_EQ(call_t("torch.einsum", {S("ij->ji"), T(a)}).dtype(), DType::kInt8);
  EXPECT_EQ(call_t("torch.einsum", {S("ij->i"), T(a)}).dtype(), DType::kInt64);
  const Tensor m = bt({true, false, true, true}, {2, 2});
  EXPECT_TRUE(tensor_equal(call_t("torch.einsum", {S("ij->i"), T(m)}), lt({1, 2}, {2})));
  EXPECT_TRUE(tensor_equal(call_t("torch.einsum", {S("ii->i"), T(m)}), bt({true, true}, {2})));
  EXPECT_TRUE(tensor_equal(call_t("torch.einsum", {S("ij->ji"), T(m)}),
                           bt({true, true, false, true}, {2, 2})));
  const Tensor h = sample({2, 3}, DType::kBFloat16, 3);
  EXPECT_EQ(call_t("torch.einsum", {S("ij->j"), T(h)}).dtype(), DType::kBFloat16);
}

TEST(EinsumOps, EmptyOperands) {
  Tensor r = call_t("torch.einsum", {S("ij,jk->ik"), T(Tensor::empty({3, 0}, DType::kFloat32)),
                                     T(Tensor::empty({0, 2}, DType::kFloat32))});
  EXPECT_TRUE(tensor_near(r, {3, 2}, std::vector<double>(6, 0.0)));
  r = call_t("torch.einsum", {S("ij,jk->ik"), T(Tensor::empty({0, 4}, DType::kFloat32)),
                              T(sample({4, 2}, DType::kFloat32, 1))});
  EXPECT_EQ(r.shape(), (Shape{0, 2}));
  r = call_t("torch.einsum", {S("ij->"), T(Tensor::empty({0, 3}, DType::kFloat32))});
  EXPECT_TRUE(tensor_near(r, {}, {0}));
  r = call_t("torch.einsum", {S("bi,bj->bij"), T(Tensor::empty({0, 3}, DType::kFloat32)),
                              T(Tensor::empty({0, 2}, DType::kFloat32))});
  EXPECT_EQ(r.shape(), (Shape{0, 3, 2}));
}

TEST(EinsumOps, Spellings) {
  const Tensor a = sample({2, 3}, DType::kFloat32, 1), b = sample({3, 4}, DType::kFloat32, 2);
  Shape shape;
  const std::vector<double> want = ref_einsum("ij,jk->ik", {a, b}, &shape);
  // torch level: varargs (torch.einsum / torch.functional.einsum) or one list.
  EXPECT_TRUE(tensor_near(call_t("torch.einsum", {S("ij,jk->ik"), T(a), T(b)}), shape, want, 1e-5));
  EXPECT_TRUE(tensor_near(call_t("torch.functional.einsum", {S("ij,jk->ik"), T(a), T(b)}), shape,
                          want, 1e-5));
  EXPECT_TRUE(
      tensor_near(call_t("torch.einsum", {S("ij,jk->ik"), L({T(a), T(b)})}), shape, want, 1e-5));
  // aten level: the list, and the optional path keyword.
  EXPECT_TRUE(tensor_near(call_t("aten.einsum.default", {S("ij,jk->ik"), L({T(a), T(b)})}), shape,
                          want, 1e-5));
  EXPECT_TRUE(tensor_near(call_t("torch.ops.aten.einsum.default", {S("ij,jk->ik"), L({T(a), T(b)})},
                                 {{"path", L({I(0), I(1)})}}),
                          shape, want, 1e-5));
  // One varargs operand.
  const Tensor sq = sample({3, 3}, DType::kFloat32, 3);
  EXPECT_TRUE(tensor_near(call_t("torch.einsum", {S("ii"), T(sq)}), {},
                          {sq.at(0) + sq.at(4) + sq.at(8)}, 1e-6));
}

TEST(EinsumOps, Errors) {
  const Tensor a = Tensor::zeros({2, 3}, DType::kFloat32),
               b = Tensor::zeros({4, 5}, DType::kFloat32);
  auto err = [](const std::string& eq, std::vector<Tensor> ops) {
    std::vector<Value> items;
    for (const Tensor& t : ops) items.push_back(T(t));
    return error_of([&] { call("einsum", {S(eq), L(items)}); });
  };
  std::string e = err("ij,jk->ik", {a, b, a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "2 operands but 3 tensors") &&
              contains(e, "[2,3], [4,5], [2,3]"))
      << e;
  e = err("ijk,jk", {a, b});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "'ijk'") && contains(e, "[2,3]")) << e;
  e = err("ij,jk", {a, b});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "subscript j has size 3") &&
              contains(e, "[2,3], [4,5]"))
      << e;
  e = err("i$->i", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "invalid subscript '$'")) << e;
  e = err("i..j->i", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "ellipsis")) << e;
  e = err("...i...->i", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "more than one ellipsis")) << e;
  e = err("ij->ik", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "output subscript k")) << e;
  e = err("ij->ii", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "more than once")) << e;
  e = err("ii->i", {a});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "repeated") && contains(e, "[2,3]")) << e;
  e = err("ij,jk->ik", {a, Tensor::zeros({3, 2}, DType::kFloat64)});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "float32 [2,3]") &&
              contains(e, "float64 [3,2]"))
      << e;
  e = err("ij,jk->ik", {Tensor::zeros({2, 3}, DType::kBool), Tensor::zeros({3, 2}, DType::kBool)});
  EXPECT_TRUE(contains(e, "[einsum]") && contains(e, "bool")) << e;
  e = err("", {});
  EXPECT_TRUE(contains(e, "[einsum]")) << e;
}

TEST(EinsumOps, CompiledEqualsEager) {
  GraphBuilder b("einsum_attention");
  Node* q = b.placeholder("q");
  Node* k = b.placeholder("k");
  Node* v = b.placeholder("v");
  Node* s = b.call_function("torch.einsum", {"bqhd,bkhd->bhqk", q, k});
  Node* p = b.call_function("torch.softmax", {b.call_method("mul", {s, 0.5}), -1});
  Node* o = b.call_function("torch.functional.einsum", {"bhqk,bkhd->bqhd", p, v});
  Node* t = b.call_function("torch.einsum", {"bhqk->bhkq", p});  // one varargs operand (a node)
  Node* d = b.call_function("aten.einsum.default", {"bqhd->bh", arg::list({o})});
  b.outputs({o, t, d});
  auto g = b.build();
  expect_compiled_equals_eager(
      *g,
      {sample({2, 3, 2, 4}, DType::kFloat32, 1), sample({2, 5, 2, 4}, DType::kFloat32, 2),
       sample({2, 5, 2, 4}, DType::kFloat32, 3)},
      1e-6);
}

}  // namespace
}  // namespace inplace::testing
