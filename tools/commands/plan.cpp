// inplace plan GRAPH.json [--inputs IN.safetensors] [--no-alias] [--mutated-input IN=OUT]...
//              [--device DEVICE] [--strict-device]
// Prints the engine's steps, bindings, aliased I/O with kinds and arena bytes.
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compile_common.h"
#include "compiler/compile.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "ir/export_signature.h"

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
    const SignatureInput* sig = signature_input(graph, n->name);
    if (sig && graph.constants.count(sig->target)) {
      out.push_back(graph.constants.at(sig->target));
      continue;
    }
    IP_CHECK(n->meta.shape && n->meta.dtype, kNotFound, "[compile] input '", n->name,
             "' has no shape: give --inputs or a \"meta\" with shape and dtype in the graph");
    out.push_back(Tensor::meta(*n->meta.shape, *n->meta.dtype));
  }
  return out;
}

CompileOptions compile_options(const std::string& command, bool no_alias,
                               const std::vector<std::string>& mutated) {
  CompileOptions co;
  co.alias = !no_alias;
  co.mutated_inputs = parse_mutated_inputs(command, mutated);
  return co;
}

namespace {
// "a:b:c" -> {"a", b, c}; the name may itself contain ':' only before the last two fields.
bool split3(const std::string& text, std::string* name, int64_t* x, int64_t* y) {
  size_t b = text.rfind(':');
  if (b == std::string::npos || b == 0) return false;
  size_t a = text.rfind(':', b - 1);
  if (a == std::string::npos || a == 0) return false;
  *name = text.substr(0, a);
  try {
    size_t used = 0;
    std::string xs = text.substr(a + 1, b - a - 1), ys = text.substr(b + 1);
    *x = std::stoll(xs, &used);
    if (used != xs.size()) return false;
    *y = std::stoll(ys, &used);
    return used == ys.size();
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

void add_runtime_value_options(CompileOptions& options, const std::vector<std::string>& dynamic,
                               const std::vector<std::string>& ranges) {
  for (const std::string& d : dynamic) {
    CompileOptions::DynamicDim dd;
    if (!split3(d, &dd.input, &dd.dim, &dd.max) || dd.dim < 0 || dd.max < 0)
      throw UsageError("--dynamic takes INPUT:DIM:MAX (DIM >= 0, MAX >= 0), got '" + d + "'");
    options.dynamic_dims.push_back(dd);
  }
  for (const std::string& r : ranges) {
    CompileOptions::ValueRange vr;
    if (!split3(r, &vr.input, &vr.lo, &vr.hi) || vr.lo > vr.hi)
      throw UsageError("--value-range takes INPUT:LO:HI (LO <= HI), got '" + r + "'");
    options.value_ranges.push_back(vr);
  }
}

void runtime_value_flags(ArgParser& p, std::vector<std::string>* dynamic,
                         std::vector<std::string>* ranges) {
  p.repeated("--dynamic", "INPUT:DIM:MAX", dynamic,
             "dim DIM of INPUT may have any extent up to MAX on a call (memory planned at MAX)");
  p.repeated("--value-range", "INPUT:LO:HI", ranges,
             "every value of integer INPUT lies in [LO, HI] (bounds sizes that depend on it; "
             "checked on each call)");
}

void strict_device_flag(ArgParser& p, bool* strict) {
  p.flag("--strict-device", strict,
         "refuse an op with no kernel on the engine's device instead of running it on the host "
         "(with a warning naming it and the bytes it moves per call)");
}

int run_plan(const std::vector<std::string>& args) {
  std::string path, inputs_path, device;
  bool no_alias = false, verbose = false, strict_device = false;
  std::vector<std::string> mutated, dynamic, ranges;
  ArgParser p("plan",
              "Compiles GRAPH.json and prints the engine: bindings, aliased I/O with\n"
              "kinds, steps (operands as buffer+offset[shape]) and arena bytes.");
  p.positional("GRAPH.json", &path, "the graph");
  p.option("--inputs", "IN.safetensors", &inputs_path,
           "example inputs fixing binding shapes (default: the placeholders' meta)");
  p.flag("--no-alias", &no_alias, "the copy-back engine");
  p.flag("--verbose", &verbose, "per-pass timing");
  p.repeated("--mutated-input", "INPUT=OUTPUT", &mutated, "declare an aliased output");
  p.option("--device", "DEVICE", &device, "cpu (default), cuda or cuda:N: where the engine runs");
  strict_device_flag(p, &strict_device);
  runtime_value_flags(p, &dynamic, &ranges);
  if (!p.parse(args)) return 0;
  std::unique_ptr<Graph> g = read_graph_json(path);
  CompileOptions co = compile_options("plan", no_alias, mutated);
  add_runtime_value_options(co, dynamic, ranges);
  co.verbose = verbose;
  if (!device.empty()) co.device = Device::parse(device);
  co.strict_device = strict_device;
  CompiledProgram cp = compile(*g, example_inputs(*g, inputs_path), co);
  std::fputs(cp.engine->describe().c_str(), stdout);
  return 0;
}

}  // namespace inplace::cli
