// inplace._C: the extension module. Compiles a graph (graph JSON text plus the module's state
// as tensors) in process and runs the engine on torch tensors passed by DLPack, never copied.
// Tensors cross as (capsule, is_bool) pairs: torch 1.13 has no DLPack bool.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "backend/kernel_table.h"
#include "compiled_graph.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "ir/export_signature.h"
#include "program_bindings.h"
#include "state_check.h"
#include "tensor_bridge.h"
#include "torch_crossing.h"
#include "version_watch.h"

namespace py = pybind11;
using namespace inplace;
using inplace::python::CallResult;
using inplace::python::CompiledGraph;

namespace {

Tensor tensor_arg(const py::handle& pair, const std::string& what) {
  return python::tensor_from_pair(pair, what);
}

std::vector<Tensor> tensor_list(const py::list& items, const std::vector<std::string>& names) {
  std::vector<Tensor> out;
  out.reserve(items.size());
  for (size_t k = 0; k < items.size(); ++k)
    out.push_back(tensor_arg(
        items[k], k < names.size() ? "input '" + names[k] + "'" : "input " + std::to_string(k)));
  return out;
}

std::unique_ptr<CompiledGraph> compile_graph(const std::string& json, const std::string& base_dir,
                                             const py::list& user_inputs, const py::dict& state,
                                             bool alias, const py::list& mutated,
                                             const py::list& dynamic, const py::list& value_ranges,
                                             const std::string& device, bool strict_device,
                                             std::optional<bool> prepare_weights) {
  std::unique_ptr<Graph> graph = read_graph_json_string(json, base_dir, "<python>");
  std::vector<std::string> names = user_input_names(*graph);
  std::vector<Tensor> inputs = tensor_list(user_inputs, names);
  State st;
  for (auto item : state) {
    std::string target = item.first.cast<std::string>();
    st[target] = tensor_arg(item.second, "state '" + target + "'");
  }
  CompileOptions co;
  co.alias = alias;
  co.device = Device::parse(device);
  co.strict_device = strict_device;
  co.prepare_weights = prepare_weights;
  for (auto m : mutated) {
    auto t = m.cast<py::tuple>();
    co.mutated_inputs.push_back({t[0].cast<std::string>(), t[1].cast<int>()});
  }
  for (auto d : dynamic) {
    auto t = d.cast<py::tuple>();
    co.dynamic_dims.push_back(
        {t[0].cast<std::string>(), t[1].cast<int64_t>(), t[2].cast<int64_t>()});
  }
  for (auto d : value_ranges) {
    auto t = d.cast<py::tuple>();
    co.value_ranges.push_back(
        {t[0].cast<std::string>(), t[1].cast<int64_t>(), t[2].cast<int64_t>()});
  }
  py::gil_scoped_release release;
  return std::make_unique<CompiledGraph>(std::move(graph), std::move(inputs), std::move(st), co);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "inplace: compile tensor programs with in-place state, run them on torch tensors";
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    }
  });

  py::class_<CompiledGraph>(m, "CompiledGraph")
      .def(
          "rebind_state",
          [](CompiledGraph& self, const std::string& target, const py::tuple& tensor) {
            Tensor t = tensor_arg(tensor, "state '" + target + "'");
            py::gil_scoped_release release;
            self.rebind_state(target, t);
          },
          py::arg("target"), py::arg("tensor"))
      .def_property_readonly("prepared_state", &CompiledGraph::prepared_state)
      .def("state_written", &CompiledGraph::state_written, py::arg("target"),
           py::call_guard<py::gil_scoped_release>())
      .def("reset", &CompiledGraph::reset, py::call_guard<py::gil_scoped_release>())
      .def("set_backend_options", &CompiledGraph::set_backend_options, py::arg("options"),
           py::call_guard<py::gil_scoped_release>())
      .def("stats", &CompiledGraph::stats)
      .def_property_readonly("threads", &CompiledGraph::threads)
      .def_property("copy_outputs", &CompiledGraph::copy_outputs, &CompiledGraph::set_copy_outputs)
      .def_property_readonly(
          "backend_option_keys",
          [](const CompiledGraph& self) { return backend_option_keys(self.engine().device()); })
      .def_property_readonly("host_steps",
                             [](const CompiledGraph& self) {
                               py::list out;
                               for (const HostStep& h : self.engine().host_steps())
                                 out.append(py::make_tuple(h.node, h.op, h.why, h.bytes));
                               return out;
                             })
      .def_property_readonly("partly_updated", &CompiledGraph::partly_updated)
      .def_property_readonly("written_user_inputs", &CompiledGraph::written_user_inputs)
      .def_property_readonly("written_state", &CompiledGraph::written_state)
      .def_property_readonly("device",
                             [](const CompiledGraph& self) { return self.engine().device().str(); })
      .def_property_readonly("user_input_names", &CompiledGraph::user_input_names)
      .def_property_readonly("user_input_viewed",
                             [](const CompiledGraph& self) {
                               std::vector<bool> out;
                               for (char v : self.user_input_viewed()) out.push_back(v != 0);
                               return out;
                             })
      .def_property_readonly(
          "aliased_io",
          [](const CompiledGraph& self) {
            py::list out;
            for (const auto& e : self.aliased_io())
              out.append(py::make_tuple(e.output, e.user_input, e.state_target, e.kind));
            return out;
          })
      .def_property_readonly("state_bindings", &CompiledGraph::state_bindings)
      .def(
          "state_tensor",
          [](const CompiledGraph& self, const std::string& target) {
            return python::tensor_to_pair(self.state_tensor(target));
          },
          py::arg("target"))
      .def_property_readonly(
          "program",
          [](const CompiledGraph& self) { return python::program_object(self.program()); })
      .def_property_readonly("user_outputs", &CompiledGraph::user_outputs)
      .def_property_readonly("input_binding_names",
                             [](const CompiledGraph& self) {
                               std::vector<std::string> names;
                               for (const auto& b : self.engine().inputs()) names.push_back(b.name);
                               return names;
                             })
      .def_property_readonly(
          "num_outputs",
          [](const CompiledGraph& self) { return self.engine().original_output_count(); })
      .def_property_readonly("num_outputs_user",
                             [](const CompiledGraph& self) { return self.num_user_outputs(); })
      .def_property_readonly(
          "arena_bytes", [](const CompiledGraph& self) { return self.engine().plan().arena_bytes; })
      .def("graph_text", &CompiledGraph::graph_text)
      .def("lowered_text", &CompiledGraph::lowered_text)
      .def("plan_text", [](const CompiledGraph& self) { return self.engine().describe(); })
      .def("save", [](const CompiledGraph& self, const std::string& path) {
        save_engine(self.engine(), path);
      });

  m.def("compile_graph", &compile_graph, py::arg("json"), py::arg("base_dir"),
        py::arg("user_inputs"), py::arg("state"), py::arg("alias") = true,
        py::arg("mutated_inputs") = py::list(), py::arg("dynamic") = py::list(),
        py::arg("value_ranges") = py::list(), py::arg("device") = "cpu",
        py::arg("strict_device") = false, py::arg("prepare_weights") = py::none());
  // Whether this build and machine can run engines on `device` ("" when so, else the reason).
  m.def("device_unavailable", [](const std::string& device) {
    std::string why;
    return device_available(Device::parse(device), &why) ? std::string() : why;
  });
  // An engine file; `state` (binding name -> tensor) is bound once as its state, on the
  // engine's device (a host tensor is copied there once: state_tensor() gives the bound one).
  m.def(
      "load_engine",
      [](const std::string& path, const py::dict& state) {
        std::shared_ptr<const Engine> engine = load_engine(path);
        State st;
        for (auto item : state) {
          std::string name = item.first.cast<std::string>();
          Tensor t = tensor_arg(item.second, "state '" + name + "'");
          st[name] = t.device() == engine->device() ? t : t.to_device(engine->device());
        }
        return std::make_unique<CompiledGraph>(std::move(engine), std::move(st));
      },
      py::arg("path"), py::arg("state") = py::dict());
  python::bind_programs(m);
  python::bind_state_check(m);
  python::bind_version_watch(m);
  python::bind_torch_crossing(m);
  m.def("graph_text", [](const std::string& json, const std::string& base_dir) {
    return read_graph_json_string(json, base_dir, "<python>")->to_string();
  });
}
