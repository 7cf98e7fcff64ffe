#include "compiler/prepared_inputs.h"

#include <map>

#include "ir/export_signature.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

// The permutation `view` applies to its input: t of a matrix, or permute; nullopt otherwise.
std::optional<std::vector<int64_t>> permutation_of(const Node* view, int64_t rank) {
  const std::string op = op_name(view);
  if (op == "t" && rank == 2 && view->args.size() == 1) return std::vector<int64_t>{1, 0};
  if (op != "permute" || view->args.size() != 2 || view->args[1].is_node()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Value& d : view->args[1].items) {
    if (d.kind != Value::Kind::kInt) return std::nullopt;
    dims.push_back(d.i < 0 ? d.i + rank : d.i);
  }
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  if (static_cast<int64_t>(dims.size()) != rank) return std::nullopt;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) return std::nullopt;
    seen[d] = 1;
  }
  return dims;
}

bool plain_clone(const Node* n) {
  if (op_name(n) != "clone" || n->args.size() != 1 || !n->args[0].is_node()) return false;
  for (const auto& [key, v] : n->kwargs)
    if (key != "memory_format" || !v.is_none()) return false;
  return true;
}

}  // namespace

std::unique_ptr<Graph> hoist_prepared_inputs(const Graph& graph, const PassContext& ctx,
                                             std::vector<Tensor>& examples,
                                             std::vector<PreparedInput>& prepared) {
  const std::vector<Node*> ph = graph.placeholders();
  std::map<const Node*, int> index;
  for (size_t i = 0; i < ph.size(); ++i) index[ph[i]] = static_cast<int>(i);
  std::vector<char> written(ph.size(), 0);
  for (const Mutation& m : ctx.mutations)
    if (m.input >= 0 && m.input < static_cast<int>(ph.size())) written[m.input] = 1;
  struct Found {
    std::string clone;  // by name: the nodes of the copy made below
    int source;
    std::vector<int64_t> perm;
  };
  std::vector<Found> found;
  for (const Node* n : graph.nodes()) {
    if (!plain_clone(n)) continue;
    const Node* view = n->args[0].node;
    if (view->args.empty() || !view->args[0].is_node()) continue;
    const Node* w = view->args[0].node;
    auto it = index.find(w);
    if (it == index.end() || written[it->second] || !is_lifted_placeholder(graph, w->name))
      continue;
    const Tensor& ex = examples[static_cast<size_t>(it->second)];
    if (!ex.defined()) continue;
    auto perm = permutation_of(view, ex.dim());
    if (!perm) continue;
    found.push_back({n->name, it->second, *perm});
  }
  if (found.empty()) return nullptr;
  std::unique_ptr<Graph> g = graph.clone();
  const int first = static_cast<int>(ph.size());
  for (const Found& f : found) {
    // After the last placeholder (found again each time: the node there may be a copy's view,
    // erased below).
    Node* after_inputs = nullptr;
    for (Node* n : g->nodes())
      if (n->op != NodeOp::kPlaceholder) {
        after_inputs = n;
        break;
      }
    Node* clone = g->find(f.clone);
    const Tensor& src = examples[static_cast<size_t>(f.source)];
    Shape shape;
    for (int64_t d : f.perm) shape.push_back(src.size(d));
    Node* input = g->insert_before(after_inputs, NodeOp::kPlaceholder, "", {}, {}, f.clone);
    input->meta.shape = shape;
    input->meta.dtype = src.dtype();
    g->replace_all_uses_with(clone, input);
    Node* view = clone->args[0].node;
    g->erase(clone);
    if (g->users(view).empty()) g->erase(view);
    g->rename(input, f.clone);  // the binding is named after the copy it replaces
    input->target = input->name;
    examples.push_back(Tensor::meta(shape, src.dtype()));
    prepared.push_back({first + static_cast<int32_t>(prepared.size()), f.source, f.perm});
  }
  return g;
}

}  // namespace inplace
