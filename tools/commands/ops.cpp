// inplace ops [--filter SUBSTRING] [--engine-only]: lists the registered ops, one schema per line
// (aten notation with alias annotations), with how an engine runs each: `out` (allocation-free
// kernel into planned memory), `view` (no step: an offset and strides), `inplace` (a mutating op,
// lowered to its functional twin), `eager` (a step that allocates), `dynamic` (data-dependent
// shape: interpreter only). --device DEVICE adds whether the engine has a kernel for the op there
// (a view needs none; a mutating op needs one for its functional twin).
#include <algorithm>
#include <cstdio>

#include "arg_parser.h"
#include "backend/kernel_table.h"
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
  // Planned results (a shape rule): the engine runs the device's kernel into planned memory.
  return op.infer ? "out" : "eager";
}

bool has_kernel(const OpDef& op, DeviceType device) {
  const KernelTable& table = KernelTable::get();
  if (op.dynamic_shape) return false;
  if (op.kind == OpKind::kView) return true;
  if (op.kind == OpKind::kMutating) {
    const OpDef* twin = op.functional.empty() ? nullptr : Registry::get().find(op.functional);
    return twin && table.find(*twin, device) != nullptr;
  }
  return table.find(op, device) != nullptr;
}

}  // namespace

int run_ops(const std::vector<std::string>& args) {
  std::string filter, device_name;
  bool engine_only = false;
  ArgParser p("ops", "Lists the registered ops: schema and how an engine runs each.");
  p.option("--filter", "SUBSTRING", &filter, "only ops whose schema contains SUBSTRING");
  p.flag("--engine-only", &engine_only, "only ops an engine runs without allocating (out, view)");
  p.option("--device", "DEVICE", &device_name,
           "add a column: whether an engine on DEVICE (cpu, cuda) has a kernel for the op");
  if (!p.parse(args)) return 0;
  const bool by_device = !device_name.empty();
  const DeviceType device = by_device ? Device::parse(device_name).type : DeviceType::kCpu;
  size_t covered = 0;
  std::vector<std::pair<std::string, std::string>> rows;
  for (const OpDef* op : Registry::get().all()) {
    std::string schema = op->schema.to_string();
    const char* form = engine_form(*op);
    if (!filter.empty() && schema.find(filter) == std::string::npos) continue;
    if (engine_only && std::string(form) != "out" && std::string(form) != "view") continue;
    std::string column = form;
    if (by_device) {
      const bool yes = has_kernel(*op, device);
      covered += yes;
      column = str_cat(form, yes ? "" : " -");
    }
    rows.emplace_back(std::move(schema), std::move(column));
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [schema, form] : rows) std::printf("%-8s %s\n", form.c_str(), schema.c_str());
  if (by_device)
    std::fprintf(stderr, "%zu ops, %zu with a kernel on %s ('-' marks the others)\n", rows.size(),
                 covered, device_type_name(device));
  else
    std::fprintf(stderr, "%zu ops\n", rows.size());
  return 0;
}

}  // namespace inplace::cli
