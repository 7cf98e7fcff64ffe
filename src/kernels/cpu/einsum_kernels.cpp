// The cpu kernel of einsum, registered into the kernel table: repeated subscripts become
// diagonal views, subscripts no later step needs are summed away early, and operands are
// contracted left to right, each pair as one batched matrix product (batch = shared kept labels,
// M/N = labels of one side, K = contracted labels), or a broadcast multiply when nothing is
// contracted. The last product writes straight into the result, through a permuted view of it,
// whenever the result's layout allows. The equation is read by ops/einsum_plan.h.
#include <algorithm>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/registration.h"
#include "ops/einsum_plan.h"

namespace inplace::cpu {

namespace {

struct Term {
  Tensor t;
  std::vector<int> labels;  // one per dim, all distinct

  int dim_of(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
  }
};

// Repeated labels: the diagonal view (its dim moves to the end, as Tensor::diagonal does).
Term diagonalize(Tensor t, std::vector<int> labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i] != labels[j]) continue;
      const int l = labels[i];
      t = t.diagonal(0, static_cast<int64_t>(i), static_cast<int64_t>(j));
      labels.erase(labels.begin() + static_cast<long>(j));
      labels.erase(labels.begin() + static_cast<long>(i));
      labels.push_back(l);
      return diagonalize(std::move(t), std::move(labels));
    }
  }
  return {std::move(t), std::move(labels)};
}

// Sums the dims whose labels `drop` selects. The result keeps the term's dtype unless
// `widen`: then integral terms sum to int64, as torch.sum does.
template <typename Drop>
Term sum_labels(const Term& x, Drop drop, bool widen_integral = false) {
  cpu::DimMask mask(x.labels.size(), false);
  Term r;
  Shape kept;
  bool any = false;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    mask[d] = drop(x.labels[d]);
    any |= mask[d];
    if (!mask[d]) {
      r.labels.push_back(x.labels[d]);
      kept.push_back(x.t.shape()[d]);
    }
  }
  if (!any) return x;
  const DType dt = x.t.dtype();
  const bool integral = is_integral(dt, /*include_bool=*/true);
  Tensor s = Tensor::empty(kept, integral ? DType::kInt64 : dt);
  cpu::sum(x.t, mask, s);
  r.t = integral && !widen_integral ? s.to(dt) : s;
  return r;
}

// Orders labels by their place in the output (labels outside it last, by label).
std::vector<int> ordered(std::vector<int> labels, const std::vector<int>& output) {
  auto rank = [&](int l) {
    auto it = std::find(output.begin(), output.end(), l);
    return it == output.end() ? static_cast<long>(output.size()) + l : it - output.begin();
  };
  std::sort(labels.begin(), labels.end(), [&](int a, int b) { return rank(a) < rank(b); });
  return labels;
}

// x permuted to `first` ++ `second` ++ `third` labels and reshaped to [first..., P, Q] where P
// and Q are the products of the `second` and `third` sizes.
Tensor as_batched_matrix(const Term& x, const std::vector<int>& first,
                         const std::vector<int>& second, const std::vector<int>& third) {
  std::vector<int64_t> perm;
  Shape shape;
  for (int l : first) {
    perm.push_back(x.dim_of(l));
    shape.push_back(x.t.size(x.dim_of(l)));
  }
  int64_t p = 1, q = 1;
  for (int l : second) {
    perm.push_back(x.dim_of(l));
    p *= x.t.size(x.dim_of(l));
  }
  for (int l : third) {
    perm.push_back(x.dim_of(l));
    q *= x.t.size(x.dim_of(l));
  }
  shape.push_back(p);
  shape.push_back(q);
  return x.t.permute(perm).reshape(shape);
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The product of two terms over their shared labels that `keep` does not need any more.
// `dest`, when defined, is the einsum result: used as the product's memory if the product's
// labels come out in the output's order.
Term contract(Term a, Term b, const std::vector<bool>& keep, const std::vector<int>& output,
              const Tensor& dest) {
  // Labels only one side has and nobody needs: sum them now.
  a = sum_labels(a, [&](int l) { return !keep[l] && b.dim_of(l) < 0; });
  b = sum_labels(b, [&](int l) { return !keep[l] && a.dim_of(l) < 0; });
  // A contracted label of size 1 on one side multiplies the other side's sum over it.
  for (int l : std::vector<int>(a.labels)) {
    const int da = a.dim_of(l), db = b.dim_of(l);
    if (keep[l] || db < 0 || a.t.size(da) == b.t.size(db)) continue;
    Term& one = a.t.size(da) == 1 ? a : b;
    Term& many = a.t.size(da) == 1 ? b : a;
    many = sum_labels(many, [l](int x) { return x == l; });
    one = sum_labels(one, [l](int x) { return x == l; });
  }
  std::vector<int> batch, contracted, a_only, b_only;
  for (int l : a.labels) {
    if (b.dim_of(l) < 0)
      a_only.push_back(l);
    else
      (keep[l] ? batch : contracted).push_back(l);
  }
  for (int l : b.labels)
    if (a.dim_of(l) < 0) b_only.push_back(l);
  batch = ordered(batch, output);
  a_only = ordered(a_only, output);
  b_only = ordered(b_only, output);
  // (a @ b) and (b @ a)^T hold the same numbers: put the output's innermost label on the N
  // side, so the product's rows are contiguous in the result.
  const bool last = dest.defined() && batch.size() + a_only.size() + b_only.size() == output.size();
  if (last && !a_only.empty() && a_only.back() == output.back()) {
    std::swap(a, b);
    std::swap(a_only, b_only);
  }
  Term r;
  r.labels = concat(concat(batch, a_only), b_only);
  Shape shape, mat_shape;
  for (int l : batch) {
    const int64_t sa = a.t.size(a.dim_of(l)), sb = b.t.size(b.dim_of(l));
    mat_shape.push_back(sa == 1 ? sb : sa);
  }
  shape = mat_shape;
  int64_t m = 1, n = 1;
  for (int l : a_only) {
    shape.push_back(a.t.size(a.dim_of(l)));
    m *= shape.back();
  }
  for (int l : b_only) {
    shape.push_back(b.t.size(b.dim_of(l)));
    n *= shape.back();
  }
  mat_shape.push_back(m);
  mat_shape.push_back(n);
  // The last product writes straight into the result, through a permuted view of it, when
  // its M labels and its N labels each sit side by side there (so each merges into one dim).
  Tensor target;
  if (last) {
    auto pos = [&](int l) {
      return static_cast<int64_t>(std::find(output.begin(), output.end(), l) - output.begin());
    };
    auto adjacent = [&](const std::vector<int>& g) {
      for (size_t i = 0; i + 1 < g.size(); ++i)
        if (pos(g[i + 1]) != pos(g[i]) + 1) return false;
      return true;
    };
    std::vector<int64_t> perm;
    for (int l : r.labels) perm.push_back(pos(l));
    if (adjacent(a_only) && adjacent(b_only)) target = dest.permute(perm);
    if (target.defined() && target.shape() != shape) target = Tensor();
  }
  Tensor prod = target.defined() ? target.view(mat_shape) : Tensor::empty(mat_shape, a.t.dtype());
  if (contracted.empty()) {
    // An outer product per batch: [.., M, 1] * [.., 1, N].
    const Tensor x = as_batched_matrix(a, batch, a_only, {});
    const Tensor y = as_batched_matrix(b, batch, {}, b_only);
    cpu::binary(cpu::BinaryOp::kMul, prod, x, y, Scalar(1), "einsum");
  } else {
    const Tensor x = as_batched_matrix(a, batch, a_only, contracted);
    const Tensor y = as_batched_matrix(b, batch, contracted, b_only);
    cpu::matmul(x, y, prod);
  }
  r.t = target.defined() ? target : prod.view(shape);
  return r;
}

void run_einsum(const Args& a, const Tensor& out) {
  const std::vector<Tensor> ts = einsum_operands(a);
  const EinsumPlan p = plan_einsum(a, ts);
  std::vector<Term> terms;
  for (size_t i = 0; i < ts.size(); ++i) terms.push_back(diagonalize(ts[i], p.labels[i]));
  std::vector<bool> in_output(static_cast<size_t>(p.num_labels()), false);
  for (int l : p.output) in_output[l] = true;
  // keep[l] after operand i: the output or a later operand still needs label l.
  auto keep_after = [&](size_t i) {
    std::vector<bool> keep = in_output;
    for (size_t j = i + 1; j < terms.size(); ++j)
      for (int l : terms[j].labels) keep[l] = true;
    return keep;
  };
  Term acc = sum_labels(
      terms[0], [&, k = keep_after(0)](int l) { return !k[l]; }, /*widen_integral=*/ts.size() == 1);
  for (size_t i = 1; i < terms.size(); ++i)
    acc = contract(std::move(acc), terms[i], keep_after(i), p.output,
                   i + 1 == terms.size() ? out : Tensor());
  acc = sum_labels(acc, [&](int l) { return !in_output[l]; });
  std::vector<int64_t> perm;
  for (int l : p.output) perm.push_back(acc.dim_of(l));
  const Tensor result = acc.t.permute(perm);
  if (!result.same_view(out)) out.copy_from(result);
}

}  // namespace

void register_einsum_kernels(KernelTable& t) {
  t.add(DeviceType::kCpu, "einsum",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_einsum(a, out[0]);
        });
}

}  // namespace inplace::cpu
