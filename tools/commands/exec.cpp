// inplace exec GRAPH.json --inputs IN.safetensors --out OUT.safetensors
//              [--mode eager|functional|compiled] [--no-alias] [--mutated-input INPUT=OUTPUT]...
//              [--cuda-graph on|off] [--stats]
// (docs/graph-json.md, "inplace exec"). OUT holds output.<i>, input.<name> and buffer.<target>.
#include <algorithm>
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "compile_common.h"
#include "exec_engine.h"
#include "exec_modes.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "ir/export_signature.h"
#include "output_path.h"
#include "run_flags.h"

namespace inplace::cli {

namespace {

// A Python number becomes a 0-d tensor: bool -> bool, int -> int64, float -> float64 (float64
// rather than torch's default float32 so the value is written exactly).
Tensor as_output_tensor(const Value& v, const std::string& what) {
  switch (v.kind) {
    case Value::Kind::kTensor:
      return v.tensor;
    case Value::Kind::kBool:
      return Tensor::scalar(Scalar(v.b), DType::kBool);
    case Value::Kind::kInt:
      return Tensor::scalar(Scalar(v.i), DType::kInt64);
    case Value::Kind::kFloat:
      return Tensor::scalar(Scalar(v.f), DType::kFloat64);
    default:
      IP_FAIL(kUnsupported, "[exec] ", what, " is ", v.kind_name(),
              "; only tensors and numbers can be written to safetensors");
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

int run_exec(const std::vector<std::string>& args) {
  std::string graph_path, inputs_path, out_path, method, mode_name = "eager";
  bool no_alias = false, print = false;
  std::vector<std::string> mutated;
  ArgParser p("exec",
              "Runs GRAPH.json on the tensors in IN.safetensors (one per user placeholder, keyed\n"
              "by placeholder name) and writes OUT.safetensors: output.<i> for each output in\n"
              "flattened order (numbers as 0-d tensors: bool, int64, float64), input.<name> for\n"
              "every placeholder after the call (so mutations show) and buffer.<target> for\n"
              "every graph constant after the call.");
  p.positional("GRAPH.json", &graph_path,
               "the graph (graph JSON version 1), or a program or engine file");
  p.option("--inputs", "IN.safetensors", &inputs_path,
           "the inputs; may be left out when the graph has none");
  p.option("--out", "OUT.safetensors", &out_path, "where to write the results", true);
  p.option("--mode", "eager|functional|compiled", &mode_name,
           "eager: the graph as written (default); functional: after the lowering passes; "
           "compiled: through an engine");
  p.option("--method", "NAME", &method,
           "a program file: the method to call (default: its only method); the program's state "
           "comes from the file, so IN holds the method's inputs alone, and OUT also gets "
           "state.<name> for each runtime-owned state");
  p.flag("--no-alias", &no_alias, "compiled mode: copy results back instead of aliasing I/O");
  p.flag("--print", &print, "also print every result written to OUT");
  p.repeated("--mutated-input", "INPUT=OUTPUT", &mutated,
             "output OUTPUT (an index, or output.<i>) is the new value of input INPUT and is "
             "written back into it");
  std::vector<std::string> dynamic, ranges;
  runtime_value_flags(p, &dynamic, &ranges);
  RunFlags run;
  run_flags(p, &run);
  if (!p.parse(args)) return 0;
  const BackendOptions backend = backend_options("exec", run);

  const Mode* mode = nullptr;
  for (const Mode& m : exec_modes())
    if (mode_name == m.name) mode = &m;
  if (!mode)
    throw UsageError("exec: unknown mode '" + mode_name +
                     "' (expected eager, "
                     "functional or compiled)");
  ExecOptions options;
  options.mode = mode_name;
  options.no_alias = no_alias;
  options.dynamic = dynamic;
  options.value_ranges = ranges;
  options.mutated_inputs = parse_mutated_inputs("exec", mutated);
  options.backend_options = backend;
  options.stats = run.stats;
  IP_CHECK(mode->run != nullptr, kUnsupported, "mode '", mode_name, "' is not available yet");

  if (looks_like_program_file(graph_path)) {
    refuse_output_over_inputs("exec", "--out", out_path,
                              {{"the program file", graph_path}, {"--inputs", inputs_path}});
    return run_exec_program(graph_path, method, inputs_path, out_path, print, backend, run.stats);
  }
  if (!method.empty()) throw UsageError("exec: --method names a method of a program file");
  if (looks_like_engine_file(graph_path)) {
    refuse_output_over_inputs("exec", "--out", out_path,
                              {{"the engine file", graph_path}, {"--inputs", inputs_path}});
    return run_exec_engine(graph_path, inputs_path, out_path, print, backend, run.stats);
  }
  if (run.stats && mode_name != "compiled")
    throw UsageError(
        "exec: --stats counts an engine's calls: give --mode compiled or an engine "
        "file");
  std::vector<std::string> constant_files;
  std::unique_ptr<Graph> graph = read_graph_json(graph_path, &constant_files);
  std::vector<std::pair<std::string, std::string>> read_from = {{"the graph", graph_path},
                                                                {"--inputs", inputs_path}};
  for (const std::string& f : constant_files) read_from.emplace_back("constant file", f);
  refuse_output_over_inputs("exec", "--out", out_path, read_from);
  std::map<std::string, Tensor> given;
  if (!inputs_path.empty()) given = read_safetensors(inputs_path);

  // User placeholders are fed from IN; a signature's parameters/buffers come from the state.
  std::vector<std::string> user_names = user_input_names(*graph);
  Inputs inputs;
  for (auto& [key, t] : given) {
    IP_CHECK(std::find(user_names.begin(), user_names.end(), key) != user_names.end(), kNotFound,
             "[exec] ", inputs_path, ": tensor '", key, "' matches no user placeholder of graph '",
             graph->name, "' (user placeholders: ", join(user_names), ")");
    inputs[key] = Value::from_tensor(t);
  }
  for (const std::string& name : user_names)
    IP_CHECK(inputs.count(name) || !graph->find(name)->args.empty(), kNotFound,
             "[exec] missing input '", name, "': ",
             inputs_path.empty() ? std::string("no --inputs file was given")
                                 : inputs_path + " has no tensor '" + name + "'");
  for (const auto& [name, index] : options.mutated_inputs)
    IP_CHECK(inputs.count(name) && inputs[name].is_tensor(), kNotFound,
             "[exec] --mutated-input names '", name,
             "', which is not a tensor input of the graph (user placeholders: ", join(user_names),
             ")");

  State state = initial_state(*graph);
  std::vector<Value> outputs = mode->run(*graph, inputs, state, options);

  for (const auto& [name, output] : options.mutated_inputs) {
    size_t index = static_cast<size_t>(output);
    IP_CHECK(index < outputs.size(), kOutOfRange, "[exec] --mutated-input ", name, "=", index,
             ": the graph has ", outputs.size(), " outputs");
    const Value& v = outputs[index];
    const Tensor& dst = inputs[name].tensor;
    IP_CHECK(v.is_tensor() && v.tensor.shape() == dst.shape() && v.tensor.dtype() == dst.dtype(),
             kShapeMismatch, "[exec] --mutated-input ", name, "=", index, ": output ", index, " (",
             v.is_tensor() ? dtype_name(v.tensor.dtype()) : v.kind_name(),
             v.is_tensor() ? shape_str(v.tensor.shape()) : "", ") does not match input '", name,
             "' (", dtype_name(dst.dtype()), shape_str(dst.shape()), ")");
    if (!v.tensor.same_view(dst)) dst.copy_from(v.tensor);
  }

  std::map<std::string, Tensor> results;
  // A None output (a forward that only updates state returns None) has nothing to write; it
  // still takes its index so the other outputs keep theirs.
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].is_none())
      results[str_cat("output.", i)] = as_output_tensor(outputs[i], str_cat("output ", i));
  for (const Node* n : graph->placeholders()) {
    auto it = inputs.find(n->name);
    const Value* v = it != inputs.end() ? &it->second : (n->args.empty() ? nullptr : &n->args[0]);
    if (v && !v->is_none())
      results["input." + n->name] = as_output_tensor(*v, "input '" + n->name + "'");
  }
  for (const auto& [target, t] : state) results["buffer." + target] = t;
  write_exec_results(out_path, results, print);
  return 0;
}

}  // namespace inplace::cli
