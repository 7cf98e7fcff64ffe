// inplace print GRAPH.json [--format text|json]
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "frontend/graph_json.h"

namespace inplace::cli {

int run_print(const std::vector<std::string>& args) {
  std::string path, format = "text";
  ArgParser p("print", "Reads GRAPH.json (graph JSON version 1), checks it, and prints it.");
  p.positional("GRAPH.json", &path, "the graph to print");
  p.option("--format", "text|json", &format,
           "text: the FX-style listing (default); json: the graph re-written as graph JSON");
  if (!p.parse(args)) return 0;
  if (format != "text" && format != "json")
    throw UsageError("print: --format must be text or json, got '" + format + "'");
  std::unique_ptr<Graph> g = read_graph_json(path);
  std::string text = format == "json" ? write_graph_json(*g) : g->to_string();
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace inplace::cli
