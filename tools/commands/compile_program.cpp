// inplace compile --method NAME=GRAPH.json [--method ...] [--dynamic METHOD.INPUT:DIM:MAX]...
//                 [--value-range METHOD.INPUT:LO:HI]... [--caller-owned STATE]...
//                 [--device cuda] -o P.inplace
// Compiles one engine per method over one state table and one copy of the weights, and saves
// the program file (docs/programs.md).
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compile_common.h"
#include "frontend/graph_json.h"
#include "inplace/program.h"
#include "output_path.h"

namespace inplace::cli {

namespace {

// "METHOD.INPUT" -> the method's index and INPUT; UsageError naming the flag and the methods.
int method_of(std::string* name, const std::vector<std::string>& methods, const char* flag) {
  size_t dot = name->find('.');
  std::string list;
  for (const std::string& m : methods) list += (list.empty() ? "" : ", ") + m;
  if (dot == std::string::npos || dot == 0)
    throw UsageError(str_cat("compile: ", flag, " takes METHOD.INPUT with --method, got '", *name,
                             "' (methods: ", list, ")"));
  std::string method = name->substr(0, dot);
  for (size_t m = 0; m < methods.size(); ++m)
    if (methods[m] == method) {
      *name = name->substr(dot + 1);
      return static_cast<int>(m);
    }
  throw UsageError(str_cat("compile: ", flag, " '", *name, "' names no method '", method,
                           "' (methods: ", list, ")"));
}

}  // namespace

int run_compile_program(const std::vector<std::string>& method_args,
                        const std::vector<std::string>& dynamic,
                        const std::vector<std::string>& ranges,
                        const std::vector<std::string>& caller_owned,
                        const std::vector<std::string>& runtime_owned, bool no_alias,
                        const std::string& device, const std::string& out_path) {
  std::vector<std::string> names, paths;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& a : method_args) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      throw UsageError("compile: --method takes NAME=GRAPH.json, got '" + a + "'");
    names.push_back(a.substr(0, eq));
    paths.push_back(a.substr(eq + 1));
  }
  std::vector<std::unique_ptr<Graph>> graphs;
  for (const std::string& path : paths) {
    std::vector<std::string> constant_files;
    graphs.push_back(read_graph_json(path, &constant_files));
    // A graph in the torch.export form (`inplace.export`): its parameter, buffer and constant
    // placeholders become get_attr nodes of the module's dotted names, valued from its
    // constants, so parameters are the program's weights and a written buffer its state (as
    // the Python package's compile_program makes them).
    if (!graphs.back()->signature.inputs.empty() || !graphs.back()->signature.outputs.empty())
      graphs.back() = state_as_attributes(*graphs.back(), graphs.back()->constants);
    inputs.emplace_back("a method's graph", path);
    for (const std::string& f : constant_files) inputs.emplace_back("constant file", f);
  }
  refuse_output_over_inputs("compile", "-o", out_path, inputs);
  std::vector<MethodSource> sources;
  for (size_t m = 0; m < graphs.size(); ++m) {
    MethodSource src{names[m], graphs[m].get(), example_inputs(*graphs[m], ""), {}};
    src.options.alias = !no_alias;
    sources.push_back(std::move(src));
  }
  CompileOptions all;
  add_runtime_value_options(all, dynamic, ranges);
  for (CompileOptions::DynamicDim d : all.dynamic_dims) {
    int m = method_of(&d.input, names, "--dynamic");
    sources[m].options.dynamic_dims.push_back(d);
  }
  for (CompileOptions::ValueRange r : all.value_ranges) {
    int m = method_of(&r.input, names, "--value-range");
    sources[m].options.value_ranges.push_back(r);
  }
  ProgramOptions po;
  po.name = graphs.size() == 1 ? graphs[0]->name : "program";
  po.caller_owned = caller_owned;
  po.runtime_owned = runtime_owned;
  if (!device.empty()) po.device = Device::parse(device);
  std::shared_ptr<const Program> program = compile_program(sources, po);
  save_program(*program, out_path);
  std::printf("wrote %s: %zu methods, %zu state entries, %zu weights, for %s\n", out_path.c_str(),
              program->methods().size(), program->state().size(), program->weights().size(),
              program->device().str().c_str());
  return 0;
}

}  // namespace inplace::cli
