// inplace._C.Program and inplace._C.Session: compile_program() over methods captured in the
// torch.export form (state placeholders become the module's attributes: parameters the
// weights, written buffers the state), sessions called by method name on torch tensors
// (DLPack both ways, never copied: an output or a state read shares the session's memory and
// keeps it alive), and generate() with the GIL released in the loop. On a GPU, a call is
// enqueued on the caller's stream (torch's current one) without waiting for it.
#include "program_bindings.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>

#include "compiled_graph.h"
#include "compiler/program_compile.h"
#include "frontend/graph_json.h"
#include "ir/export_signature.h"
#include "program/engine_program.h"
#include "program/generate.h"
#include "program/method_from_export.h"
#include "program/program_file.h"
#include "program/session.h"
#include "tensor_bridge.h"

namespace py = pybind11;

namespace inplace::python {

namespace {

struct PyProgram {
  std::shared_ptr<const Program> program;
};

struct PySession {
  std::shared_ptr<const Program> program;
  std::unique_ptr<Session> session;
};

std::vector<std::tuple<std::string, int64_t, int64_t>> triples(const py::list& items) {
  std::vector<std::tuple<std::string, int64_t, int64_t>> out;
  for (auto item : items) {
    auto t = item.cast<py::tuple>();
    out.emplace_back(t[0].cast<std::string>(), t[1].cast<int64_t>(), t[2].cast<int64_t>());
  }
  return out;
}

// methods: [(name, graph json, base_dir, [user input pairs], {target: pair}, dynamic, ranges)].
PyProgram compile_methods(const std::string& name, const py::list& methods,
                          const std::vector<std::string>& caller_owned, const std::string& device) {
  Device dev = Device::parse(device);
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<MethodSource> sources;
  for (auto item : methods) {
    auto m = item.cast<py::tuple>();
    MethodSource src;
    src.name = m[0].cast<std::string>();
    std::unique_ptr<Graph> captured = read_graph_json_string(
        m[1].cast<std::string>(), m[2].cast<std::string>(), "<method " + src.name + ">");
    std::vector<std::string> names = user_input_names(*captured);
    auto inputs = m[3].cast<py::list>();
    for (size_t k = 0; k < inputs.size(); ++k)
      src.example_inputs.push_back(tensor_from_pair(
          inputs[k], str_cat("method '", src.name, "': input '",
                             k < names.size() ? names[k] : std::to_string(k), "'")));
    State state;
    for (auto s : m[4].cast<py::dict>()) {
      std::string target = s.first.cast<std::string>();
      state[target] = tensor_from_pair(s.second, "state '" + target + "'");
    }
    for (const auto& [input, dim, bound] : triples(m[5].cast<py::list>()))
      src.options.dynamic_dims.push_back({input, dim, bound});
    for (const auto& [input, lo, hi] : triples(m[6].cast<py::list>()))
      src.options.value_ranges.push_back({input, lo, hi});
    src.options.device = dev;
    graphs.push_back(state_as_attributes(*captured, state));
    src.graph = graphs.back().get();
    sources.push_back(std::move(src));
  }
  ProgramOptions options;
  options.name = name;
  options.caller_owned = caller_owned;
  options.device = dev;
  py::gil_scoped_release release;
  return {compile_program(sources, options)};
}

py::list method_inputs(const Program& p, const std::string& method) {
  const Method& m = p.method(method);
  py::list out;
  for (int i : m.call_inputs) {
    const Binding& b = m.engine->inputs()[i];
    out.append(py::make_tuple(b.name, b.shape, dtype_name(b.dtype), b.dynamic_dims,
                              m.state_of_input[i] >= 0));
  }
  return out;
}

py::list state_entries(const Program& p) {
  py::list out;
  for (const StateEntry& s : p.state().entries())
    out.append(py::make_tuple(s.name, s.shape, dtype_name(s.dtype), ownership_name(s.ownership)));
  return out;
}

// Whether output `t` is memory the caller already holds: a view of the session's state or of
// one of the call's inputs.
bool held_by_caller(const Session& s, const Tensor& t, const std::map<std::string, Tensor>& ins) {
  for (const StateEntry& e : s.program().state().entries())
    if (e.ownership == Ownership::kRuntime && t.same_storage(s.state(e.name))) return true;
  for (const auto& in : ins)
    if (t.same_storage(in.second)) return true;
  return false;
}

py::list run_method(PySession& self, const std::string& method, const py::dict& inputs,
                    uintptr_t stream) {
  std::map<std::string, Tensor> ts;
  for (auto item : inputs) {
    std::string name = item.first.cast<std::string>();
    ts[name] = tensor_from_pair(item.second, str_cat("method '", method, "': input '", name, "'"));
  }
  std::vector<Tensor> outs;
  std::vector<bool> owned;
  {
    py::gil_scoped_release release;
    outs = self.session->run(method, ts, reinterpret_cast<void*>(stream));
    // A device context's outputs are its own buffers, rewritten by the method's next call: the
    // caller gets tensors of its own, as from a torch op, copied by torch on the call's stream
    // (no cudaMalloc/cudaFree here, whose free waits for the whole device).
    for (const Tensor& t : outs)
      owned.push_back(!self.program->device().is_cpu() && t.defined() && !t.is_meta() &&
                      !held_by_caller(*self.session, t, ts));
  }
  py::list out;
  for (size_t k = 0; k < outs.size(); ++k) out.append(tensor_to_pair(outs[k], owned[k]));
  return out;
}

py::dict generate(PySession& self, const std::vector<int64_t>& prompt, int64_t max_new_tokens,
                  double temperature, int64_t top_k, double top_p, uint64_t seed,
                  const std::vector<int64_t>& stop_tokens, const py::object& callback,
                  int64_t start_position) {
  GenerateOptions options;
  options.max_new_tokens = max_new_tokens;
  options.sampling = {temperature, top_k, top_p, seed};
  options.stop_tokens = stop_tokens;
  options.start_position = start_position;
  // The callback runs with the GIL held; an exception in it stops the loop and is raised here.
  std::unique_ptr<py::error_already_set> raised;
  if (!callback.is_none())
    options.on_token = [&](int64_t token) {
      py::gil_scoped_acquire acquire;
      try {
        py::object r = callback(token);
        return r.is_none() || r.cast<bool>();
      } catch (py::error_already_set& e) {
        raised = std::make_unique<py::error_already_set>(std::move(e));
        return false;
      }
    };
  GenerateResult r;
  {
    py::gil_scoped_release release;
    r = self.session->generate(prompt, options);
  }
  if (raised) throw std::move(*raised);
  py::dict out;
  out["tokens"] = r.tokens;
  out["stopped_by"] = r.stopped_by;
  out["prompt_tokens"] = r.prompt_tokens;
  out["time_to_first_token_s"] = r.time_to_first_token_s;
  out["tokens_per_second"] = r.tokens_per_second;
  return out;
}

// An in-process compiled graph as a one-method program `forward` (what inplace.save writes):
// `state` holds, by state target, the value each state binding starts from (parameters become
// weights, written buffers runtime-owned state; program_from_engine).
PyProgram program_from_compiled(const CompiledGraph& g, const py::dict& state,
                                const std::map<std::string, std::string>& metadata) {
  const Engine& e = g.engine();
  std::map<std::string, Tensor> values;
  for (auto item : state) {
    std::string target = item.first.cast<std::string>();
    values[target] = tensor_from_pair(item.second, "state '" + target + "'");
  }
  EngineProgramOptions options;
  options.metadata = metadata;
  for (const auto& [binding, target] : g.state_bindings()) {
    auto it = values.find(target);
    IP_CHECK(it != values.end(), kNotFound, "[save] no value for state '", target, "'");
    options.state[e.input_index(binding)] = {target, it->second};
  }
  // A write the engine leaves to the caller (a copy-back engine's signature mutation) would
  // be lost in a session: refused instead.
  for (const std::string& target : g.written_state()) {
    bool in_engine = false;
    for (const auto& [binding, t] : g.state_bindings())
      for (int i : e.mutated_inputs()) in_engine |= t == target && e.inputs()[i].name == binding;
    IP_CHECK(in_engine, kUnsupported, "[save] engine '", e.name(), "' returns the new value of '",
             target, "' for the caller to copy back; compile with aliasing to save it");
  }
  py::gil_scoped_release release;
  return {program_from_engine(g.engine_ptr(), options)};
}

py::list method_aliased_io(const Program& p, const std::string& method) {
  const Engine& e = *p.method(method).engine;
  py::list out;
  for (const Mutation& a : e.aliased_io())
    out.append(py::make_tuple(a.output, e.inputs()[a.input].name, mutation_kind_name(a.kind)));
  return out;
}

}  // namespace

py::object program_object(std::shared_ptr<const Program> program) {
  return py::cast(PyProgram{std::move(program)});
}

void bind_programs(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def("run", &run_method, py::arg("method"), py::arg("inputs"), py::arg("stream") = 0)
      .def(
          "reset",
          [](PySession& self, uintptr_t stream) {
            self.session->reset(reinterpret_cast<void*>(stream));
          },
          py::arg("stream") = 0, py::call_guard<py::gil_scoped_release>())
      .def(
          "synchronize", [](PySession& self) { self.session->synchronize(); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "set_backend_option",
          [](PySession& self, const std::string& key, const std::string& value) {
            self.session->set_backend_option(key, value);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "stats",
          [](const PySession& self, const std::string& method) {
            ContextStats s = self.session->context(method).stats();
            std::map<std::string, int64_t> out = s.backend;
            out["calls"] = s.calls;
            return out;
          },
          py::arg("method"))
      .def(
          "state",
          [](const PySession& self, const std::string& name) {
            return tensor_to_pair(self.session->state(name));
          },
          py::arg("name"))
      .def_property_readonly("threads",
                             [](const PySession& self) { return self.session->threads(); })
      .def_property_readonly("refused_reason",
                             [](const PySession& self) { return self.session->refused_reason(); })
      .def("generate", &generate, py::arg("prompt"), py::arg("max_new_tokens"),
           py::arg("temperature"), py::arg("top_k"), py::arg("top_p"), py::arg("seed"),
           py::arg("stop_tokens"), py::arg("callback"), py::arg("start_position"));

  py::class_<PyProgram>(m, "Program")
      .def_property_readonly("name", [](const PyProgram& self) { return self.program->name(); })
      .def_property_readonly("device",
                             [](const PyProgram& self) { return self.program->device().str(); })
      .def_property_readonly("methods",
                             [](const PyProgram& self) {
                               std::vector<std::string> names;
                               for (const Method& mt : self.program->methods())
                                 names.push_back(mt.name);
                               return names;
                             })
      .def(
          "method_inputs",
          [](const PyProgram& self, const std::string& method) {
            return method_inputs(*self.program, method);
          },
          py::arg("method"))
      .def("num_outputs",
           [](const PyProgram& self, const std::string& method) {
             return self.program->method(method).engine->original_output_count();
           })
      .def_property_readonly("state",
                             [](const PyProgram& self) { return state_entries(*self.program); })
      .def_property_readonly("metadata",
                             [](const PyProgram& self) { return self.program->metadata(); })
      .def(
          "aliased_io",
          [](const PyProgram& self, const std::string& method) {
            return method_aliased_io(*self.program, method);
          },
          py::arg("method"))
      .def(
          "host_steps",
          [](const PyProgram& self, const std::string& method) {
            py::list out;
            for (const HostStep& h : self.program->method(method).engine->host_steps())
              out.append(py::make_tuple(h.node, h.op, h.why, h.bytes));
            return out;
          },
          py::arg("method"))
      .def(
          "plan_text",
          [](const PyProgram& self, const std::string& method) {
            return self.program->method(method).engine->describe();
          },
          py::arg("method"))
      .def_property_readonly(
          "backend_option_keys",
          [](const PyProgram& self) { return backend_option_keys(self.program->device()); })
      .def_property_readonly("weight_bytes",
                             [](const PyProgram& self) { return self.program->weight_bytes(); })
      .def_property_readonly("num_weights",
                             [](const PyProgram& self) { return self.program->weights().size(); })
      .def("describe", [](const PyProgram& self) { return self.program->describe(); })
      .def("check_generate", [](const PyProgram& self) { check_generate_methods(*self.program); })
      .def(
          "save",
          [](const PyProgram& self, const std::string& path) { save_program(*self.program, path); },
          py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("new_session", [](const PyProgram& self) {
        return PySession{self.program, self.program->new_session()};
      });

  m.def("program_from_compiled", &program_from_compiled, py::arg("compiled"), py::arg("state"),
        py::arg("metadata"));
  m.def("compile_program", &compile_methods, py::arg("name"), py::arg("methods"),
        py::arg("caller_owned") = std::vector<std::string>(), py::arg("device") = "cpu");
  m.def(
      "load_program",
      [](const std::string& path, const std::string& device) {
        std::optional<Device> dev;
        if (!device.empty()) dev = Device::parse(device);
        py::gil_scoped_release release;
        return PyProgram{load_program_or_engine(path, dev)};
      },
      py::arg("path"), py::arg("device") = "");
}

}  // namespace inplace::python
