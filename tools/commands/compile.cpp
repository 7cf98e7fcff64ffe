// inplace compile GRAPH.json [--inputs IN.safetensors] [--mutated-input IN=OUT]... [--no-alias]
//                 -o model.inplace
// Compiles a graph and saves the engine (docs/engine-format.md); with --method NAME=GRAPH.json
// (repeated) compiles a program instead (compile_program.cpp, docs/programs.md).
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compile_common.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "output_path.h"

namespace inplace::cli {

int run_compile(const std::vector<std::string>& args) {
  std::string path, inputs_path, out_path, device;
  bool no_alias = false, strict_device = false;
  std::vector<std::string> mutated, dynamic, ranges, methods, caller_owned, runtime_owned;
  ArgParser p("compile",
              "Compiles GRAPH.json into an engine file: bindings, steps, weights and\n"
              "the aliased I/O map (docs/engine-format.md). With --method, compiles a\n"
              "program: named methods over one state table and one copy of the weights\n"
              "(docs/programs.md); --dynamic and --value-range then name METHOD.INPUT.");
  p.positional("GRAPH.json", &path, "the graph (without --method)", /*required=*/false);
  p.repeated("--method", "NAME=GRAPH.json", &methods, "a method of a program (repeat for each)");
  p.repeated("--caller-owned", "STATE", &caller_owned,
             "program state (a buffer's dotted name) the caller passes on every call");
  p.repeated("--runtime-owned", "STATE", &runtime_owned,
             "a mutated input each session owns instead, starting from zeros");
  p.option("--inputs", "IN.safetensors", &inputs_path,
           "example inputs fixing binding shapes (default: the placeholders' meta)");
  p.repeated("--mutated-input", "INPUT=OUTPUT", &mutated, "declare an aliased output");
  p.flag("--no-alias", &no_alias, "the copy-back engine (no aliased I/O)");
  p.option("--device", "DEVICE", &device,
           "cpu (default), cuda or cuda:N: where the engine (every method) runs");
  strict_device_flag(p, &strict_device);
  p.option("-o", "model.inplace", &out_path, "the engine file to write", /*required=*/true);
  runtime_value_flags(p, &dynamic, &ranges);
  if (!p.parse(args)) return 0;
  if (!methods.empty()) {
    if (!path.empty())
      throw UsageError("compile: give either GRAPH.json or --method NAME=GRAPH.json, not both");
    if (!mutated.empty() || !inputs_path.empty())
      throw UsageError(
          "compile: --mutated-input and --inputs apply to a single graph, not --method");
    return run_compile_program(methods, dynamic, ranges, caller_owned, runtime_owned, no_alias,
                               device, out_path);
  }
  if (path.empty())
    throw UsageError(
        "compile: missing GRAPH.json or --method NAME=GRAPH.json (see 'inplace compile --help')");
  if (!caller_owned.empty() || !runtime_owned.empty())
    throw UsageError("compile: --caller-owned and --runtime-owned need --method");
  std::vector<std::string> constant_files;
  std::unique_ptr<Graph> g = read_graph_json(path, &constant_files);
  std::vector<std::pair<std::string, std::string>> inputs = {{"the graph", path},
                                                             {"--inputs", inputs_path}};
  for (const std::string& f : constant_files) inputs.emplace_back("constant file", f);
  refuse_output_over_inputs("compile", "-o", out_path, inputs);
  CompileOptions co = compile_options("compile", no_alias, mutated);
  add_runtime_value_options(co, dynamic, ranges);
  if (!device.empty()) co.device = Device::parse(device);
  co.strict_device = strict_device;
  CompiledProgram cp = compile(*g, example_inputs(*g, inputs_path), co);
  save_engine(*cp.engine, out_path);
  std::printf("wrote %s: %zu inputs, %zu outputs, %zu aliased\n", out_path.c_str(),
              cp.engine->inputs().size(), cp.engine->outputs().size(),
              cp.engine->aliased_io().size());
  return 0;
}

}  // namespace inplace::cli
