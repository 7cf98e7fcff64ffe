// Sorting: topk, sort (stable, NaN largest like torch), argsort, msort.
#include "kernels/cpu/sort.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// A 0-d tensor sorts as a one-element lane: dim may be 0 or -1.
int64_t sort_dim(const Tensor& x, const Value& dim, const char* op) {
  return wrap_dim(dim.as_int("dim"), std::max<int64_t>(x.dim(), 1), op);
}

// Runs the kernel on views with at least one dim.
void run_sort(const Tensor& x, int64_t dim, int64_t k, bool descending, const Tensor& values,
              const Tensor& indices) {
  if (x.dim() > 0) return cpu::sort_lanes(x, dim, k, descending, values, indices);
  auto lift = [](const Tensor& t) { return t.defined() ? t.view({1}) : t; };
  cpu::sort_lanes(x.reshape({1}), 0, k, descending, lift(values), lift(indices));
}

void register_topk(Registry& r) {
  struct Plan {
    int64_t dim, k;
    Shape shape;
  };
  auto plan = [](const Args& a) {
    const Tensor& x = a[0].as_tensor("topk");
    Plan p;
    p.dim = sort_dim(x, a[2], "topk");
    p.k = a[1].as_int("k");
    const int64_t size = x.dim() > 0 ? x.size(p.dim) : 1;
    IP_CHECK(p.k >= 0 && p.k <= size, kInvalidArgument, "[topk] k (", p.k,
             ") is out of range for dim ", p.dim, " of size ", size, " of input ",
             shape_str(x.shape()));
    IP_CHECK(x.dtype() != DType::kBool, kDTypeMismatch, "[topk] not implemented for bool input ",
             shape_str(x.shape()));
    p.shape = x.shape();
    if (x.dim() > 0) p.shape[p.dim] = p.k;
    return p;
  };
  // sorted=False leaves the order to the implementation in torch; the result here is always
  // sorted, and equal values come in ascending index order.
  r.add_out(
      "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor "
      "values, Tensor indices)",
      [plan](const Args& a) {
        Plan p = plan(a);
        return std::vector<Tensor>{Tensor::meta(p.shape, a[0].tensor.dtype()),
                                   Tensor::meta(p.shape, DType::kInt64)};
      },
      [plan](const Args& a, const std::vector<Tensor>& out) {
        Plan p = plan(a);
        // A 0-d input is copied, even for k=0, as torch does.
        const int64_t k = a[0].tensor.dim() > 0 ? p.k : 1;
        run_sort(a[0].tensor, p.dim, k, a[3].as_bool("largest"), out[0], out[1]);
      });
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
  auto run = [](const Args& a, size_t first, const Tensor& values, const Tensor& indices,
                const char* op) {
    const Tensor& x = a[0].as_tensor(op);
    const int64_t dim = sort_dim(x, a[first], op);
    run_sort(x, dim, x.dim() > 0 ? x.size(dim) : 1, a[first + 1].as_bool("descending"), values,
             indices);
  };
  r.add_out(
      "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
      [infer](const Args& a) { return infer(a, 1, true, "sort"); },
      [run](const Args& a, const std::vector<Tensor>& out) { run(a, 1, out[0], out[1], "sort"); });
  // Every sort here is stable, so `stable` only selects the overload.
  r.add_out(
      "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor "
      "values, Tensor indices)",
      [infer](const Args& a) { return infer(a, 2, true, "sort"); },
      [run](const Args& a, const std::vector<Tensor>& out) { run(a, 2, out[0], out[1], "sort"); });
  r.add_out(
      "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
      [infer](const Args& a) { return infer(a, 1, false, "argsort"); },
      [run](const Args& a, const std::vector<Tensor>& out) {
        run(a, 1, Tensor(), out[0], "argsort");
      });
  r.add_out(
      "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
      [infer](const Args& a) { return infer(a, 2, false, "argsort"); },
      [run](const Args& a, const std::vector<Tensor>& out) {
        run(a, 2, Tensor(), out[0], "argsort");
      });
  // msort(x) is sort(x, dim=0).values.
  r.add_out(
      "msort(Tensor self) -> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("msort");
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& x = a[0].as_tensor("msort");
        run_sort(x, 0, x.dim() > 0 ? x.size(0) : 1, false, out[0], Tensor());
      });
}

}  // namespace

void register_sort_ops(Registry& r) {
  register_topk(r);
  register_sort(r);
}

}  // namespace inplace
