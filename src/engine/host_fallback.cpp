#include "engine/host_fallback.h"

#include "backend/backend.h"
#include "backend/host_step.h"
#include "core/device_allocator.h"
#include "engine/op_meta.h"

namespace inplace {

std::string why_not_on_device(const KernelTable& table, const Step& s, Device device) {
  if ((s.kind != StepKind::kOut && s.kind != StepKind::kEager) || !s.op) return "";
  if (device.is_cpu() && s.kind == StepKind::kEager) return "";  // eager_call
  const std::string none = str_cat("has no kernel for device '", device.str(), "'");
  if (!table.find(*s.op, device.type)) return none;
  const Supports* supports = table.supports(*s.op, device.type);
  if (!supports) return "";
  std::vector<Value> args = s.args;
  for (const TensorSlot& t : s.tensors)
    leaf_at(args, t.path)->tensor =
        Tensor::meta(t.ref.shape, t.ref.dtype, t.ref.strides, t.ref.offset);
  std::string why = (*supports)(args);
  return why.empty() ? why : none + " for these arguments: " + why;
}

std::vector<HostStep> place_on_host(Plan& plan, bool strict) {
  if (plan.device.is_cpu()) return {};
  const KernelTable& table = KernelTable::get();
  for (Step& s : plan.steps) {
    std::string why = why_not_on_device(table, s, plan.device);
    if (why.empty()) continue;
    IP_CHECK(!strict, kUnsupported, "[engine] node '", s.node, "': op '", s.op->schema.full_name(),
             "' ", why, " (`inplace ops --device ", device_type_name(plan.device.type),
             "` lists the ops it covers; without strict_device it runs on the host)");
    s.on_host = true;
  }
  return host_steps(plan);
}

std::vector<HostStep> host_steps(const Plan& plan) {
  const KernelTable& table = KernelTable::get();
  std::vector<HostStep> out;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    if (!s.on_host) continue;
    HostStep h;
    h.step = q;
    h.node = s.node;
    h.op = s.op ? s.op->schema.full_name() : "copy";
    h.why = why_not_on_device(table, s, plan.device);
    if (h.why.empty()) h.why = "is placed there by the engine file";
    h.bytes = host_step_bytes(s);
    out.push_back(std::move(h));
  }
  return out;
}

std::string describe_host_steps(const Plan& plan, const std::vector<HostStep>& steps,
                                const std::string& prefix) {
  if (steps.empty()) return "";
  std::string out;
  int64_t total = 0;
  for (const HostStep& h : steps) {
    out += str_cat(prefix, "node '", h.node, "': op '", h.op, "' ", h.why,
                   "; runs on the host, moving ", h.bytes, " bytes per call\n");
    total += h.bytes;
  }
  out += str_cat(prefix, steps.size(),
                 steps.size() == 1 ? " step on the host moves " : " steps on the host move ", total,
                 " bytes per call (strict_device refuses such steps)");
  if (has_device_allocator(plan.device.type)) {
    const std::string note = backend_for(plan.device).host_step_note();
    if (!note.empty()) out += "; " + note;
  }
  return out + "\n";
}

}  // namespace inplace
