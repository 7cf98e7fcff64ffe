#include "passes/norm_weight.h"

#include "passes/op_info.h"

namespace inplace {

Node* one_plus_weight_source(const Graph& g, const MetaTable& metas, Node* add, int64_t k,
                             DType x_dtype, std::vector<Node*>* dead) {
  auto is_one = [](const Value& v) { return v.is_number() && v.as_double("norm weight") == 1; };
  const auto& a = add->args;
  if (op_name(add) != "add" || a.size() != 2 || !a[0].is_node() || !is_one(a[1]) ||
      g.users(add).size() != 1)
    return nullptr;
  for (const auto& [name, v] : add->kwargs)  // alpha, bound: 1
    if (name != "alpha" || !is_one(v)) return nullptr;
  Node* w = a[0].node;
  std::vector<Node*> chain{add};
  const std::string name = op_name(w);
  if ((name == "to" || name == "_to_copy") && !w->args.empty() && w->args[0].is_node() &&
      cast_only_to_dtype(resolve_node(*w), DType::kFloat32) && g.users(w).size() == 1) {
    chain.push_back(w);
    w = w->args[0].node;
  }
  const Tensor* wm = metas.tensor(w);
  if ((w->op != NodeOp::kPlaceholder && w->op != NodeOp::kGetAttr) || !wm ||
      wm->shape() != Shape{k} ||
      (wm->dtype() != DType::kFloat32 && (chain.size() == 1 || wm->dtype() != x_dtype)))
    return nullptr;
  dead->insert(dead->end(), chain.begin(), chain.end());
  return w;
}

bool upcast_norm_has_default_tail(const Node* norm) {
  const auto& a = norm->args;
  if (a.size() > 6) return false;
  if (a.size() > 4 && !(a[4].is_number() && a[4].as_double("upcast_rms_norm") == 0)) return false;
  return a.size() <= 5 || a[5].is_none();
}

}  // namespace inplace
