#include "ir/export_signature.h"

namespace inplace {

const SignatureInput* signature_input(const Graph& graph, const std::string& node) {
  for (const SignatureInput& in : graph.signature.inputs)
    if (in.node == node) return &in;
  return nullptr;
}

bool is_lifted_placeholder(const Graph& graph, const std::string& node) {
  for (const SignatureInput& in : graph.signature.inputs)
    if (in.node == node && in.kind != "user_input") return true;
  return false;
}

std::vector<std::string> user_input_names(const Graph& graph) {
  std::vector<std::string> out;
  for (const Node* n : graph.placeholders())
    if (!is_lifted_placeholder(graph, n->name)) out.push_back(n->name);
  return out;
}

std::vector<DeclaredMutation> signature_mutations(const Graph& graph, int num_outputs) {
  const Signature& sig = graph.signature;
  std::vector<DeclaredMutation> out;
  if (sig.outputs.empty() || static_cast<int>(sig.outputs.size()) != num_outputs) return out;
  for (size_t o = 0; o < sig.outputs.size(); ++o) {
    const SignatureOutput& so = sig.outputs[o];
    if (so.kind == "user_input_mutation") out.push_back({so.target, static_cast<int>(o)});
    if (so.kind == "buffer_mutation")
      for (const SignatureInput& si : sig.inputs)
        if (si.target == so.target) out.push_back({si.node, static_cast<int>(o)});
  }
  return out;
}

}  // namespace inplace
