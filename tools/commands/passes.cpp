// inplace passes GRAPH.json [--until NAME] [--print-after NAME] [--inputs IN.safetensors]
//                           [--format text|json] [--verbose]
// Runs the pass pipeline (functionalization; the engine passes when --until or --print-after
// names one) and prints the graph (docs/passes.md).
#include <algorithm>
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "passes/functional_program.h"

namespace inplace::cli {

namespace {

std::string pass_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// What alias_analysis found, as comment lines under the listing.
std::string summary(const PassContext& ctx) {
  if (ctx.original_output_count < 0) return "";
  std::string s = str_cat("# original outputs: ", ctx.original_output_count, "\n# io_map: {");
  bool first = true;
  for (auto [o, i] : ctx.io_map()) {
    s += str_cat(first ? "" : ", ", o, ": ", i);
    first = false;
  }
  s += "}\n";
  for (const Mutation& m : ctx.mutations)
    s += str_cat("#   output ", m.output, " is the new value of ",
                 ctx.is_buffer(m.input) ? "buffer '" : "input '", ctx.input_names[m.input],
                 "' (input ", m.input,
                 m.kind == MutationKind::kKvCacheUpdate ? ", written by kv_cache_update" : "",
                 ")\n");
  return s;
}

}  // namespace

int run_passes(const std::vector<std::string>& args) {
  std::string path, until, print_after, inputs_path, format = "text";
  bool verbose = false;
  const std::vector<std::string> names = pass_names(compile_passes());
  const std::vector<std::string> functional = functionalization_pass_names();
  ArgParser p(
      "passes",
      "Runs the passes that make GRAPH.json functional:\n  " + pass_list(functional) +
          "\n(--until or --print-after an engine pass also runs the engine passes:\n  " +
          pass_list(std::vector<std::string>(names.begin() + functional.size(), names.end())) +
          ")\nand prints the graph after the last pass run (or after --print-after),\n"
          "then the io_map: which outputs are new values of which inputs.");
  p.positional("GRAPH.json", &path, "the graph (graph JSON version 1)");
  p.option("--until", "NAME", &until, "stop after this pass");
  p.option("--print-after", "NAME", &print_after,
           "print the graph after this pass instead of at the end");
  p.option("--inputs", "IN.safetensors", &inputs_path,
           "take the placeholders' shapes and dtypes from these tensors");
  p.option("--format", "text|json", &format, "text: FX-style listing (default); json: graph JSON");
  p.flag("--verbose", &verbose, "print each pass's time to stderr");
  if (!p.parse(args)) return 0;
  if (format != "text" && format != "json")
    throw UsageError("passes: --format must be text or json, got '" + format + "'");

  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n); };
  if (!until.empty() && !print_after.empty()) {
    if (at(until) != names.end() && at(print_after) != names.end() && at(print_after) > at(until))
      throw UsageError("passes: --print-after " + print_after + " comes after --until " + until);
  }
  // Without --until the pipeline runs through functionalization, or through the pass
  // --print-after names when that is a later (engine) pass.
  if (until.empty()) {
    until = functional.back();
    if (at(print_after) != names.end() && at(print_after) > at(until)) until = print_after;
  }
  std::unique_ptr<Graph> graph = read_graph_json(path);
  PassContext ctx;
  ctx.options.verbose = verbose;
  if (!inputs_path.empty()) {
    std::map<std::string, Value> given;
    for (auto& [k, t] : read_safetensors(inputs_path)) given[k] = Value::from_tensor(t);
    ctx.options.input_metas = metas_of_inputs(given);
  }
  auto print = [&](const Graph& g, const PassContext& c) {
    std::string text = format == "json" ? write_graph_json(g) : g.to_string() + summary(c);
    std::fputs(text.c_str(), stdout);
  };
  PipelineOptions options;
  options.until = until;
  options.print_after = print_after;
  options.printer = print;
  inplace::run_passes(compile_passes(), *graph, ctx, options);
  if (print_after.empty()) print(*graph, ctx);
  return 0;
}

}  // namespace inplace::cli
