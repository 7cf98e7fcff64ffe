#include "program/method_from_export.h"

#include "core/error.h"
#include "ir/export_signature.h"

namespace inplace {

namespace {

// The output node's values in flattened order (torch.export returns one flat tuple).
std::vector<Value>* flat_outputs(Node* out) {
  if (out->args.size() == 1 && out->args[0].is_sequence()) return &out->args[0].items;
  return &out->args;
}

}  // namespace

std::unique_ptr<Graph> state_as_attributes(const Graph& graph, const State& state) {
  std::unique_ptr<Graph> g = graph.clone();
  std::map<std::string, Node*> attr_of;   // target -> its get_attr node
  std::map<std::string, Node*> input_of;  // user input name -> its placeholder
  Node* first_other = nullptr;
  for (Node* n : g->nodes())
    if (n->op != NodeOp::kPlaceholder) {
      first_other = n;
      break;
    }
  for (Node* ph : g->placeholders()) {
    const SignatureInput* si = signature_input(*g, ph->name);
    if (!si || si->kind == "user_input") {
      input_of[ph->name] = ph;
      continue;
    }
    auto it = state.find(si->target);
    IP_CHECK(it != state.end(), kNotFound, "[program] graph '", graph.name, "': no tensor for ",
             si->kind, " '", si->target, "' (placeholder '", ph->name, "')");
    Node*& attr = attr_of[si->target];
    if (!attr) {
      attr =
          g->insert_before(first_other, NodeOp::kGetAttr, si->target, {}, {}, ph->name + "_attr");
      attr->meta = ph->meta;
      g->constants[si->target] = it->second;
    }
    g->replace_all_uses_with(ph, attr);
    g->erase(ph);
  }
  const std::vector<SignatureOutput>& outs = graph.signature.outputs;
  Node* out = g->output();
  if (out && !outs.empty()) {
    std::vector<Value>* flat = flat_outputs(out);
    IP_CHECK(flat->size() == outs.size(), kInvalidArgument, "[program] graph '", graph.name,
             "' returns ", flat->size(), " values but its signature lists ", outs.size());
    std::vector<Value> kept;
    for (size_t j = 0; j < outs.size(); ++j) {
      const SignatureOutput& so = outs[j];
      if (so.kind == "user_output") {
        kept.push_back((*flat)[j]);
        continue;
      }
      Node* dst = nullptr;
      if (so.kind == "buffer_mutation") {
        auto it = attr_of.find(so.target);
        dst = it == attr_of.end() ? nullptr : it->second;
      } else {
        auto it = input_of.find(so.target);
        dst = it == input_of.end() ? nullptr : it->second;
      }
      IP_CHECK(dst, kNotFound, "[program] graph '", graph.name, "': output ", j, " (", so.kind,
               ") names '", so.target, "', which is no ",
               so.kind == "buffer_mutation" ? "buffer" : "input", " of the graph");
      g->insert_before(out, NodeOp::kCallFunction, "aten.copy_.default",
                       {Value::node_ref(dst), (*flat)[j]}, {}, "copy_into_" + dst->name);
    }
    *flat = std::move(kept);
  }
  g->signature = Signature();
  g->verify();
  return g;
}

}  // namespace inplace
