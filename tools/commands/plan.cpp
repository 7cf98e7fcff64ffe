// inplace plan GRAPH.json [--inputs IN.safetensors] [--no-alias] [--mutated-input IN=OUT]...
// Prints the engine's steps, bindings, aliased I/O with kinds and arena bytes.
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compiler/compile.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"

namespace inplace::cli {

// Example inputs for compiling: tensors from IN where given, else the placeholder's meta
// shape and dtype (graph JSON "meta"), else the signature's constant.
std::vector<Tensor> example_inputs(const Graph& graph, const std::string& inputs_path) {
  std::map<std::string, Tensor> given;
  if (!inputs_path.empty()) given = read_safetensors(inputs_path);
  std::vector<Tensor> out;
  for (Node* n : graph.placeholders()) {
    auto it = given.find(n->name);
    if (it != given.end()) {
      out.push_back(it->second);
      continue;
    }
    const Tensor* constant = nullptr;
    for (const SignatureInput& in : graph.signature.inputs)
      if (in.node == n->name && graph.constants.count(in.target))
        constant = &graph.constants.at(in.target);
    if (constant) {
      out.push_back(*constant);
      continue;
    }
    IP_CHECK(n->meta.shape && n->meta.dtype, kNotFound, "[compile] input '", n->name,
             "' has no shape: give --inputs or a \"meta\" with shape and dtype in the graph");
    out.push_back(Tensor::meta(*n->meta.shape, *n->meta.dtype));
  }
  return out;
}

CompileOptions compile_options(bool no_alias, const std::vector<std::string>& mutated) {
  CompileOptions co;
  co.alias = !no_alias;
  for (const std::string& m : mutated) {
    size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      throw UsageError("--mutated-input takes INPUT=OUTPUT, got '" + m + "'");
    co.mutated_inputs.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  return co;
}

int run_plan(const std::vector<std::string>& args) {
  std::string path, inputs_path;
  bool no_alias = false, verbose = false;
  std::vector<std::string> mutated;
  ArgParser p("plan", "Compiles GRAPH.json and prints the engine: bindings, aliased I/O with\n"
                      "kinds, steps (operands as buffer+offset[shape]) and arena bytes.");
  p.positional("GRAPH.json", &path, "the graph");
  p.option("--inputs", "IN.safetensors", &inputs_path,
           "example inputs fixing binding shapes (default: the placeholders' meta)");
  p.flag("--no-alias", &no_alias, "the copy-back engine");
  p.flag("--verbose", &verbose, "per-pass timing");
  p.repeated("--mutated-input", "INPUT=OUTPUT", &mutated, "declare an aliased output");
  if (!p.parse(args)) return 0;
  std::unique_ptr<Graph> g = read_graph_json(path);
  CompileOptions co = compile_options(no_alias, mutated);
  co.verbose = verbose;
  CompiledProgram cp = compile(*g, example_inputs(*g, inputs_path), co);
  std::fputs(cp.engine->describe().c_str(), stdout);
  return 0;
}

}  // namespace inplace::cli
