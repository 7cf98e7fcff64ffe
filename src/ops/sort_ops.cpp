// Sorting: topk, sort (stable, NaN largest like torch), argsort, msort. Their arguments are
// decoded by ops/sort_args.h, which the kernels read too.
#include "ops/registry.h"
#include "ops/sort_args.h"

namespace inplace {

namespace {

using sorting::sort_dim;

void register_topk(Registry& r) {
  // sorted=False leaves the order to the implementation in torch; the result here is always
  // sorted, and equal values come in ascending index order.
  r.add_out(
      "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor "
      "values, Tensor indices)",
      [](const Args& a) {
        const sorting::TopkArgs p = sorting::topk_args(a);
        return std::vector<Tensor>{Tensor::meta(p.shape, a[0].tensor.dtype()),
                                   Tensor::meta(p.shape, DType::kInt64)};
      },
      nullptr);
}

void register_sort(Registry& r) {
  // args from `first`: dim, descending ; both sort overloads and argsort share it.
  auto infer = [](const Args& a, size_t first, bool with_values, const char* op) {
    const Tensor& x = a[0].as_tensor(op);
    sort_dim(x, a[first], op);
    std::vector<Tensor> out;
    if (with_values) out.push_back(Tensor::meta(x.shape(), x.dtype()));
    out.push_back(Tensor::meta(x.shape(), DType::kInt64));
    return out;
  };
  r.add_out(
      "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
      [infer](const Args& a) { return infer(a, 1, true, "sort"); }, nullptr);
  // Every sort here is stable, so `stable` only selects the overload.
  r.add_out(
      "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor "
      "values, Tensor indices)",
      [infer](const Args& a) { return infer(a, 2, true, "sort"); }, nullptr);
  r.add_out(
      "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
      [infer](const Args& a) { return infer(a, 1, false, "argsort"); }, nullptr);
  r.add_out(
      "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
      [infer](const Args& a) { return infer(a, 2, false, "argsort"); }, nullptr);
  // msort(x) is sort(x, dim=0).values.
  r.add_out(
      "msort(Tensor self) -> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("msort");
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      nullptr);
}

}  // namespace

void register_sort_ops(Registry& r) {
  register_topk(r);
  register_sort(r);
}

}  // namespace inplace
