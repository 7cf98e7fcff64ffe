// inplace compile GRAPH.json [--inputs IN.safetensors] [--mutated-input IN=OUT]... [--no-alias]
//                 -o model.inplace
// Compiles a graph and saves it as a program file of one method, `forward` (docs/programs.md):
// the signature's parameters become its weights and the buffers it writes its runtime-owned
// state, starting from the graph's constants; with --method NAME=GRAPH.json (repeated) the
// program has those methods instead (compile_program.cpp).
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compile_common.h"
#include "compiler/exported_program.h"
#include "frontend/graph_json.h"
#include "interpreter/interpreter.h"
#include "ir/export_signature.h"
#include "output_path.h"
#include "program/program_file.h"

namespace inplace::cli {

namespace {

// A buffer_mutation the engine leaves to its caller (the copy-back engine returns the new value
// instead of writing it) would be lost in a session: refused, as Python's save refuses it.
void refuse_writes_left_to_the_caller(const Graph& g, const CompiledProgram& cp) {
  std::vector<Node*> ph = g.placeholders();
  for (const SignatureOutput& o : g.signature.outputs) {
    if (o.kind != "buffer_mutation") continue;
    bool written = false;
    for (int i : cp.engine->mutated_inputs()) {
      const SignatureInput* in =
          i < static_cast<int>(ph.size()) ? signature_input(g, ph[i]->name) : nullptr;
      written |= in && in->target == o.target;
    }
    IP_CHECK(written, kUnsupported, "[compile] graph '", g.name, "' returns the new value of '",
             o.target, "' for the caller to copy back (--no-alias); compile with aliasing");
  }
}

}  // namespace

int run_compile(const std::vector<std::string>& args) {
  std::string path, inputs_path, out_path, device;
  bool no_alias = false, strict_device = false;
  std::vector<std::string> mutated, dynamic, ranges, methods, caller_owned, runtime_owned;
  ArgParser p("compile",
              "Compiles GRAPH.json into a program file of one method, forward: its\n"
              "parameters are the weights, the buffers it writes the state, starting\n"
              "from the graph's values, so a call takes the user's inputs alone. With\n"
              "--method, the program has the methods named, over one state table and\n"
              "one copy of the weights (docs/programs.md); --dynamic and --value-range\n"
              "then name METHOD.INPUT.");
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
  p.option("-o", "model.inplace", &out_path, "the program file to write", /*required=*/true);
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
  refuse_writes_left_to_the_caller(*g, cp);
  std::shared_ptr<const Program> program = exported_program(cp, *g, initial_state(*g));
  save_program(*program, out_path);
  const Method& m = program->methods()[0];
  std::printf("wrote %s: method %s: %zu inputs, %d outputs, %zu aliased, %zu state\n",
              out_path.c_str(), m.name.c_str(), m.call_inputs.size(),
              m.engine->original_output_count(), m.engine->aliased_io().size(),
              program->state().entries().size());
  return 0;
}

}  // namespace inplace::cli
