// inplace ops [--filter SUBSTRING] [--engine-only]: lists the registered ops, one schema per line
// (aten notation with alias annotations), with how an engine runs each: `out` (allocation-free
// kernel into planned memory), `view` (no step: an offset and strides), `inplace` (a mutating op,
// lowered to its functional twin), `eager` (a step that allocates), `dynamic` (data-dependent
// shape: interpreter only).
#include <algorithm>
#include <cstdio>

#include "arg_parser.h"
#include "commands.h"
#include "ops/registry.h"

namespace inplace::cli {

namespace {

const char* engine_form(const OpDef& op) {
  if (op.dynamic_shape) return "dynamic";
  switch (op.kind) {
    case OpKind::kView:
      return "view";
    case OpKind::kMutating:
      return "inplace";
    case OpKind::kFunctional:
      break;
  }
  return op.out ? "out" : "eager";
}

}  // namespace

int run_ops(const std::vector<std::string>& args) {
  std::string filter;
  bool engine_only = false;
  ArgParser p("ops", "Lists the registered ops: schema and how an engine runs each.");
  p.option("--filter", "SUBSTRING", &filter, "only ops whose schema contains SUBSTRING");
  p.flag("--engine-only", &engine_only, "only ops an engine runs without allocating (out, view)");
  if (!p.parse(args)) return 0;
  std::vector<std::pair<std::string, const char*>> rows;
  for (const OpDef* op : Registry::get().all()) {
    std::string schema = op->schema.to_string();
    const char* form = engine_form(*op);
    if (!filter.empty() && schema.find(filter) == std::string::npos) continue;
    if (engine_only && std::string(form) != "out" && std::string(form) != "view") continue;
    rows.emplace_back(std::move(schema), form);
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [schema, form] : rows) std::printf("%-8s %s\n", form, schema.c_str());
  std::fprintf(stderr, "%zu ops\n", rows.size());
  return 0;
}

}  // namespace inplace::cli
