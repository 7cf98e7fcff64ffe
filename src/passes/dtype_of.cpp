#include "passes/dtype_of.h"

#include <set>
#include <string>

#include "ops/registry.h"
#include "passes/op_info.h"

namespace inplace {

std::optional<DType> DtypeOf::of(const Node* n) {
  if (const Tensor* t = metas_.tensor(n)) return t->dtype();
  auto it = memo_.find(n);
  if (it != memo_.end()) return it->second;
  memo_[n] = std::nullopt;  // cycles cannot happen, but stay safe
  static const std::set<std::string> kSameAsFirst = {"linear",
                                                     "scaled_dot_product_attention",
                                                     "rounded_attention",
                                                     "reshape",
                                                     "view",
                                                     "transpose",
                                                     "permute",
                                                     "contiguous",
                                                     "clone",
                                                     "unsqueeze",
                                                     "squeeze",
                                                     "silu",
                                                     "neg",
                                                     "rms_norm",
                                                     "upcast_rms_norm",
                                                     "slice",
                                                     "select",
                                                     "expand",
                                                     "index_select",
                                                     "embedding",
                                                     "getitem",
                                                     "rsqrt",
                                                     "sqrt",
                                                     "exp",
                                                     "rotary_embedding"};
  static const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "pow"};
  const std::string name = op_name(n);
  std::optional<DType> out;
  if (kSameAsFirst.count(name) && !n->args.empty() && n->args[0].is_node()) {
    out = of(n->args[0].node);
    // linear and attention refuse mixed dtypes, so the first operand's is the result's.
  } else if (kBinary.count(name) && n->args.size() >= 2 && n->args[0].is_node() &&
             n->args[1].is_node()) {
    auto a = of(n->args[0].node), b = of(n->args[1].node);
    if (a && b && *a == *b) out = a;
  } else if (kBinary.count(name) && n->args.size() >= 2 && n->args[0].is_node() &&
             n->args[1].is_number()) {  // a floating tensor with a Python number keeps its dtype
    auto a = of(n->args[0].node);
    if (a && is_floating(*a)) out = a;
  } else if (name == "mean" && !n->args.empty() && n->args[0].is_node()) {
    bool cast = false;
    for (const auto& [k, v] : n->kwargs) cast |= k == "dtype" && !v.is_none();
    if (!cast) out = of(n->args[0].node);
  } else if ((name == "fused_linear" || name == "gated_mlp" || name == "rms_norm_linear" ||
              name == "rms_norm_gated_mlp") &&
             !n->args.empty() && n->args[0].is_node()) {
    out = of(n->args[0].node);  // computed in the input's dtype, whatever the weight's
  } else if (name == "type_as" && n->args.size() == 2 && n->args[1].is_node()) {
    out = of(n->args[1].node);
  } else if (name == "to" || name == "_to_copy") {  // the dtype argument, wherever it sits
    for (const Value& v : n->args)
      if (v.kind == Value::Kind::kDType) out = v.dtype;
    for (const auto& [k, v] : n->kwargs)
      if (v.kind == Value::Kind::kDType) out = v.dtype;
  } else if (name == "cat" && !n->args.empty() && n->args[0].is_sequence()) {
    for (const Value& v : n->args[0].items) {
      auto d = v.is_node() ? of(v.node) : std::nullopt;
      if (!d || (out && *out != *d)) {
        out = std::nullopt;
        break;
      }
      out = d;
    }
  }
  memo_[n] = out;
  return out;
}

}  // namespace inplace
