#include "ops/einsum_plan.h"

#include <algorithm>

namespace inplace {

namespace {

constexpr int kEllipsis = -1;  // a token standing for "..."

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shape_str(shapes[i]);
  return s;
}

// One subscript ("ij", "...k", "b...") as labels, kEllipsis where "..." stands.
std::vector<int> parse_subscript(const std::string& sub, const std::string& eq) {
  std::vector<int> tokens;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < sub.size(); ++i) {
    const char c = sub[i];
    if (c == '.') {
      IP_CHECK(sub.compare(i, 3, "...") == 0, kInvalidArgument, "[einsum] equation '", eq,
               "': '.' must be part of an ellipsis '...'");
      IP_CHECK(!seen_ellipsis, kInvalidArgument, "[einsum] equation '", eq, "': subscript '", sub,
               "' has more than one ellipsis '...'");
      seen_ellipsis = true;
      tokens.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int label = letter_label(c);
    IP_CHECK(label >= 0, kInvalidArgument, "[einsum] equation '", eq, "': invalid subscript '",
             std::string(1, c), "' (subscripts are letters [a-zA-Z] and '...')");
    tokens.push_back(label);
  }
  return tokens;
}

}  // namespace

std::string EinsumPlan::label_name(int label) {
  if (label < 26) return std::string(1, static_cast<char>('A' + label));
  if (label < kNumLetters) return std::string(1, static_cast<char>('a' + label - 26));
  return str_cat("...[", label - kNumLetters, "]");
}

EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> subs;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    subs.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  IP_CHECK(subs.size() == shapes.size(), kInvalidArgument, "[einsum] equation '", equation,
           "' names ", subs.size(), " operands but ", shapes.size(), " tensors were given (",
           shapes_str(shapes), ")");

  // Expand "..." to the dims it covers in each operand.
  std::vector<std::vector<int>> tokens;
  std::vector<int64_t> ell_dims(subs.size(), 0);
  int64_t max_ell = 0;
  for (size_t i = 0; i < subs.size(); ++i) {
    tokens.push_back(parse_subscript(subs[i], eq));
    const int64_t nd = static_cast<int64_t>(shapes[i].size());
    const bool has_ell = std::count(tokens[i].begin(), tokens[i].end(), kEllipsis) > 0;
    const int64_t letters = static_cast<int64_t>(tokens[i].size()) - (has_ell ? 1 : 0);
    IP_CHECK(has_ell ? nd >= letters : nd == letters, kShapeMismatch, "[einsum] equation '",
             equation, "': subscript '", subs[i], "' of operand ", i, " names ", letters,
             " dims but the operand has shape ", shape_str(shapes[i]));
    ell_dims[i] = has_ell ? nd - letters : 0;
    max_ell = std::max(max_ell, ell_dims[i]);
  }
  EinsumPlan plan;
  plan.sizes.assign(static_cast<size_t>(kNumLetters + max_ell), -1);
  std::vector<int> count(plan.sizes.size(), 0);
  std::vector<int> first_operand(plan.sizes.size(), -1);
  for (size_t i = 0; i < subs.size(); ++i) {
    std::vector<int> labels;
    for (int t : tokens[i]) {
      if (t != kEllipsis) {
        labels.push_back(t);
        continue;
      }
      for (int64_t j = 0; j < ell_dims[i]; ++j)
        labels.push_back(static_cast<int>(kNumLetters + max_ell - ell_dims[i] + j));
    }
    std::vector<int64_t> local(plan.sizes.size(), -1);
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t s = shapes[i][d];
      int64_t& size = plan.sizes[l];
      if (local[l] >= 0) {
        // A repeated label within one operand takes its diagonal: sizes must agree exactly.
        IP_CHECK(local[l] == s, kShapeMismatch, "[einsum] equation '", equation, "': subscript ",
                 EinsumPlan::label_name(l), " is repeated for operand ", i, " of shape ",
                 shape_str(shapes[i]), " but the sizes don't match, ", local[l], " != ", s);
      } else if (size == -1 || size == 1) {
        size = s;
      } else {
        IP_CHECK(s == size || s == 1, kShapeMismatch, "[einsum] equation '", equation,
                 "': subscript ", EinsumPlan::label_name(l), " has size ", size, " in operand ",
                 first_operand[l], " but ", s, " in operand ", i, " (shapes ", shapes_str(shapes),
                 "); sizes must match or be 1");
      }
      local[l] = s;
      if (first_operand[l] < 0) first_operand[l] = static_cast<int>(i);
      ++count[l];
    }
    plan.labels.push_back(std::move(labels));
  }

  if (arrow != std::string::npos) {
    std::vector<bool> seen(plan.sizes.size(), false);
    for (int t : parse_subscript(eq.substr(arrow + 2), eq)) {
      if (t == kEllipsis) {
        // Every "..." dim joins the output here; without "..." in the output they are summed.
        for (int64_t j = 0; j < max_ell; ++j)
          plan.output.push_back(static_cast<int>(kNumLetters + j));
        continue;
      }
      IP_CHECK(count[t] > 0, kInvalidArgument, "[einsum] equation '", equation,
               "': output subscript ", EinsumPlan::label_name(t),
               " does not appear in the equation for any input operand");
      IP_CHECK(!seen[t], kInvalidArgument, "[einsum] equation '", equation, "': output subscript ",
               EinsumPlan::label_name(t), " appears more than once");
      seen[t] = true;
      plan.output.push_back(t);
    }
  } else {
    // Implicit output: the "..." dims, then every letter used exactly once, in label order.
    for (int64_t j = 0; j < max_ell; ++j) plan.output.push_back(static_cast<int>(kNumLetters + j));
    for (int l = 0; l < kNumLetters; ++l)
      if (count[l] == 1) plan.output.push_back(l);
  }
  for (int l : plan.output) plan.out_shape.push_back(plan.sizes[l]);
  return plan;
}

std::vector<Tensor> einsum_operands(const Args& a) {
  const Value& list = a[1];
  IP_CHECK(list.is_sequence(), kInvalidArgument, "[einsum] tensors must be a list of tensors, not ",
           list.kind_name());
  std::vector<Tensor> out;
  for (const Value& v : list.items) out.push_back(v.as_tensor("einsum"));
  return out;
}

DType einsum_result_dtype(const EinsumPlan& p, const std::vector<Tensor>& ts) {
  const DType dt = ts[0].dtype();
  if (ts.size() > 1 || !is_integral(dt, /*include_bool=*/true)) return dt;
  for (int l : p.labels[0])
    if (std::find(p.output.begin(), p.output.end(), l) == p.output.end()) return DType::kInt64;
  return dt;
}

EinsumPlan plan_einsum(const Args& a, const std::vector<Tensor>& ts) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ts) shapes.push_back(t.shape());
  const std::string& eq = a[0].as_string("equation");
  IP_CHECK(!ts.empty(), kInvalidArgument, "[einsum] equation '", eq,
           "' must be given at least one operand");
  EinsumPlan p = plan_einsum(eq, shapes);
  for (const Tensor& t : ts) {
    IP_CHECK(t.dtype() == ts[0].dtype(), kDTypeMismatch, "[einsum] equation '", eq,
             "': operands must have the same dtype, got ", dtype_name(ts[0].dtype()), " ",
             shape_str(ts[0].shape()), " and ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
    IP_CHECK(t.dtype() != DType::kBool || ts.size() == 1, kDTypeMismatch, "[einsum] equation '", eq,
             "': products of bool tensors are not implemented");
  }
  return p;
}

}  // namespace inplace
