// `inplace exec PROGRAM --inputs IN --out OUT [--method NAME]`: one call of a program file's
// method on a fresh session. The state comes from the file (runtime-owned state starts from its
// stored value), so IN holds the method's plain inputs alone, by name, plus any caller-owned
// state it uses (a buffer's stored value when left out). OUT gets output.<i> for each method
// output, input.<name> for each input after the call and state.<name> for each runtime-owned
// state after the call.
#include <cstdio>

#include "exec_engine.h"
#include "frontend/safetensors.h"
#include "program/program_file.h"
#include "program/session.h"

namespace inplace::cli {

namespace {

Tensor on_host(const Tensor& t) {
  return t.device().is_cpu() ? t : t.to_device(Device::cpu());
}

}  // namespace

int run_exec_program(const std::string& path, const std::string& method_name,
                     const std::string& inputs_path, const std::string& out_path, bool print,
                     const BackendOptions& options, bool stats) {
  return run_exec_on_program(load_program(path), path, method_name, inputs_path, out_path, print,
                             options, stats);
}

int run_exec_on_program(std::shared_ptr<const Program> program, const std::string& path,
                        const std::string& method_name, const std::string& inputs_path,
                        const std::string& out_path, bool print, const BackendOptions& options,
                        bool stats) {
  std::string method = method_name;
  if (method.empty()) {
    std::string names;
    for (const Method& m : program->methods())
      names += (names.empty() ? "'" : ", '") + m.name + "'";
    IP_CHECK(program->methods().size() == 1, kInvalidArgument, "[exec] ", path, " has methods ",
             names, ": name one with --method");
    method = program->methods()[0].name;
  }
  const Method& m = program->method(method);
  const StateTable& table = program->state();
  std::map<std::string, Tensor> given;
  if (!inputs_path.empty()) given = read_safetensors(inputs_path);
  for (int i : m.call_inputs) {
    const int s = m.state_of_input[i];
    if (s < 0 || given.count(table[s].name) || !table[s].initial.defined()) continue;
    given[table[s].name] = table[s].initial.clone();  // a caller-owned buffer's stored value
  }
  const std::string in_label = inputs_path.empty() ? "(no --inputs)" : inputs_path;
  const Engine& e = *m.engine;
  for (const auto& [name, t] : given) {
    bool known = false;
    for (int i : m.call_inputs) known |= e.inputs()[i].name == name;
    IP_CHECK(known, kNotFound, "[exec] ", in_label, ": tensor '", name,
             "' matches no input of method '", method, "' of ", path, "; its inputs are ",
             m.call_input_names(),
             table.find(name) >= 0 ? " (the state is the program's own)" : "");
  }
  for (int i : m.call_inputs)
    IP_CHECK(given.count(e.inputs()[i].name), kNotFound, "[exec] missing input '",
             e.inputs()[i].name, "' of method '", method, "' of ", path, ": ", in_label,
             " has no tensor '", e.inputs()[i].name, "' (its inputs are ", m.call_input_names(),
             ")");
  for (auto& [name, t] : given) {
    const int s = table.find(name);
    if (s >= 0 && !program->device().is_cpu()) t = t.to_device(program->device());
  }
  std::unique_ptr<Session> session = program->new_session();
  session->set_backend_options(options);
  std::vector<Tensor> outputs = session->run(method, given);
  session->synchronize();
  std::map<std::string, Tensor> results;
  for (size_t j = 0; j < outputs.size(); ++j)
    if (outputs[j].defined()) results[str_cat("output.", j)] = on_host(outputs[j]);
  for (const auto& [name, t] : given) results["input." + name] = on_host(t);
  for (const StateEntry& e : table.entries())
    if (e.ownership == Ownership::kRuntime)
      results["state." + e.name] = on_host(session->state(e.name));
  write_exec_results(out_path, results, print);
  if (stats) std::printf("stats: %s\n", stats_line(session->stats(method)).c_str());
  return 0;
}

}  // namespace inplace::cli
