// Graph JSON, version 1 (docs/graph-json.md): one FX-style graph per file, at torch
// level or aten level. Reading validates everything and runs Graph::verify(); any problem is
// an inplace::Error (kParse, or kIO for an unreadable file) naming the file and the node.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace inplace {

// Reads a graph; constants stored as {"file", "key"} resolve relative to the JSON's folder.
// `constant_files`, when given, receives the path of every such file read (the CLI refuses to
// write its output over any of them).
std::unique_ptr<Graph> read_graph_json(const std::string& path,
                                       std::vector<std::string>* constant_files = nullptr);
// The same from text; `base_dir` resolves constant files, `label` names the text in errors.
std::unique_ptr<Graph> read_graph_json_string(const std::string& text,
                                              const std::string& base_dir = ".",
                                              const std::string& label = "<string>",
                                              std::vector<std::string>* constant_files = nullptr);

// Every constant is written inline.
std::string write_graph_json(const Graph& graph);

struct GraphJsonFileOptions {
  // When not empty, constants go to this safetensors file (relative to the JSON's folder,
  // keyed by get_attr target) and the JSON refers to them; otherwise they are inline.
  std::string constants_file;
};
void write_graph_json_file(const Graph& graph, const std::string& path,
                           const GraphJsonFileOptions& options = {});

}  // namespace inplace
