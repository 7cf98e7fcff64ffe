// inplace run PROGRAM --calls CALLS.json --out OUT.safetensors [--print] [--device DEVICE]
//             [--cuda-graph on|off] [--stats]
// Replays a script of calls (call_script.h) on a program's sessions, created on first use. The
// runner plays the caller: it holds each session's caller-owned state (from the call's inputs
// file when given there, else the tensor it already holds, else the stored initial value) and
// passes it to every call. OUT holds call.<i>.output.<j> (its value when call i returned) for
// every call and session.<S>.state.<name> for every state entry of every session at the end.
// A program on a GPU takes its inputs from the host files (copied to the device) and its
// results come back to the host to be saved.
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "arg_parser.h"
#include "call_script.h"
#include "commands.h"
#include "frontend/safetensors.h"
#include "inplace/program.h"
#include "output_path.h"
#include "run_flags.h"

namespace inplace::cli {

namespace {

struct ScriptSession {
  std::unique_ptr<Session> session;
  std::set<std::string> methods_called;
  std::map<std::string, Tensor> caller_state;  // caller-owned state this caller holds
};

// A copy of host tensor `t` on `device`, where the caller keeps its state.
Tensor on_device(const Tensor& t, Device device) {
  return device.is_cpu() ? t.clone() : t.to_device(device);
}

Tensor on_host(const Tensor& t) {
  return t.device().is_cpu() ? t : t.to_device(Device::cpu());
}

void hold_initial(const Program& p, ScriptSession& s) {
  s.caller_state.clear();
  for (const StateEntry& e : p.state().entries())
    if (e.ownership == Ownership::kCaller && e.initial.defined())
      s.caller_state[e.name] = on_device(e.initial, p.device());
}

}  // namespace

int run_run(const std::vector<std::string>& args) {
  std::string path, calls_path, out_path, device;
  bool print = false;
  ArgParser p("run",
              "Replays CALLS.json on sessions of PROGRAM (a program file, or an engine file\n"
              "as a one-method program 'forward'). CALLS.json is a list of\n"
              "{\"session\": S, \"method\": M, \"inputs\": \"IN.safetensors\"} and\n"
              "{\"session\": S, \"reset\": true} entries (paths relative to CALLS.json).\n"
              "OUT gets call.<i>.output.<j> and session.<S>.state.<name> (docs/programs.md).");
  p.positional("PROGRAM", &path, "the program file (inplace compile --method ... -o PROGRAM)");
  p.option("--calls", "CALLS.json", &calls_path, "the script of calls", /*required=*/true);
  p.option("--out", "OUT.safetensors", &out_path, "where to write the results", true);
  p.flag("--print", &print, "also print every result");
  p.option("--device", "DEVICE", &device,
           "run on DEVICE (cpu, cuda, cuda:N) instead of the device PROGRAM was compiled for");
  RunFlags run;
  run_flags(p, &run);
  if (!p.parse(args)) return 0;
  const BackendOptions backend = backend_options("run", run);
  std::vector<ScriptEntry> script = read_call_script(calls_path);
  std::vector<std::pair<std::string, std::string>> inputs = {{"the program", path},
                                                             {"--calls", calls_path}};
  for (const ScriptEntry& e : script)
    if (!e.inputs_path.empty()) inputs.emplace_back("a call's inputs", e.inputs_path);
  refuse_output_over_inputs("run", "--out", out_path, inputs);
  std::shared_ptr<const Program> program = load_program_or_engine(
      path, device.empty() ? std::nullopt : std::optional<Device>(Device::parse(device)));
  const StateTable& table = program->state();
  std::map<std::string, ScriptSession> sessions;
  std::vector<std::string> order;
  std::map<std::string, Tensor> results;
  for (size_t i = 0; i < script.size(); ++i) {
    const ScriptEntry& e = script[i];
    auto [it, fresh] = sessions.try_emplace(e.session);
    ScriptSession& s = it->second;
    if (fresh) {
      s.session = program->new_session();
      s.session->set_backend_options(backend);
      hold_initial(*program, s);
      order.push_back(e.session);
    }
    if (e.reset) {
      s.session->reset();
      hold_initial(*program, s);
      continue;
    }
    const Method& m = program->method(e.method);
    std::map<std::string, Tensor> given;
    if (!e.inputs_path.empty()) given = read_safetensors(e.inputs_path);
    for (int in : m.call_inputs) {
      int st = m.state_of_input[in];
      if (st < 0) continue;
      const std::string& name = table[st].name;
      auto g = given.find(name);
      if (g != given.end()) {
        if (!program->device().is_cpu()) g->second = on_device(g->second, program->device());
        s.caller_state[name] = g->second;  // the caller hands over its tensor
      } else {
        auto held = s.caller_state.find(name);
        IP_CHECK(held != s.caller_state.end(), kNotFound, "[run] ", calls_path, ": entry ", i,
                 ": caller-owned state '", name, "' of session ", e.session,
                 " has no value yet and has no initial value; give it in ",
                 e.inputs_path.empty() ? std::string("the call's inputs") : e.inputs_path);
        given[name] = held->second;
      }
    }
    std::vector<Tensor> outs;
    s.methods_called.insert(e.method);
    try {
      outs = s.session->run(e.method, given);
    } catch (const Error& err) {
      throw Error(err.code(), str_cat("[run] ", calls_path, ": entry ", i, " (session ", e.session,
                                      ", method ", e.method, "): ", err.what()));
    }
    // A copy now: an output may be a view of session state (cache[:, :, 0:2]) or a buffer the
    // context reuses, which later calls and resets overwrite; call.<i> is its value at call i.
    for (size_t j = 0; j < outs.size(); ++j)
      results[str_cat("call.", i, ".output.", j)] = outs[j].to_device(Device::cpu());
  }
  for (const std::string& name : order) {
    ScriptSession& s = sessions.at(name);
    s.session->synchronize();  // an error a device flagged after the last call
    for (const StateEntry& st : table.entries()) {
      std::string key = str_cat("session.", name, ".state.", st.name);
      if (st.ownership == Ownership::kRuntime) {
        results[key] = on_host(s.session->state(st.name));
      } else if (s.caller_state.count(st.name)) {
        results[key] = on_host(s.caller_state.at(st.name));
      }
    }
  }
  write_safetensors(out_path, results);
  if (print)
    for (const auto& [key, t] : results)
      std::printf("  %-40s %s\n", key.c_str(), t.to_string(16).c_str());
  std::printf("ran %zu entries on %zu sessions: wrote %s\n", script.size(), order.size(),
              out_path.c_str());
  if (run.stats)
    for (const std::string& name : order)
      for (const std::string& method : sessions.at(name).methods_called)
        std::printf("stats: session %s method %s: %s\n", name.c_str(), method.c_str(),
                    stats_line(sessions.at(name).session->stats(method)).c_str());
  return 0;
}

}  // namespace inplace::cli
