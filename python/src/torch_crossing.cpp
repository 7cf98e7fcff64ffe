#include "torch_crossing.h"

#include <optional>

#include "tensor_bridge.h"

namespace py = pybind11;

namespace inplace::python {

namespace {

// Python's vectorcall entry points (no argument tuple per call), a Python error rethrown.
py::object checked(PyObject* result) {
  if (!result) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

py::object get(const py::handle& obj, const py::str& name) {
  return checked(PyObject_GetAttr(obj.ptr(), name.ptr()));
}

py::object call_method(const py::handle& obj, const py::str& name) {
  return checked(PyObject_CallMethodNoArgs(obj.ptr(), name.ptr()));
}

py::object call_method(const py::handle& obj, const py::str& name, const py::handle& arg) {
  return checked(PyObject_CallMethodOneArg(obj.ptr(), name.ptr(), arg.ptr()));
}

py::object call(const py::handle& f, const py::handle& arg) {
  return checked(PyObject_CallOneArg(f.ptr(), arg.ptr()));
}

}  // namespace

TorchCrossing::TorchCrossing(py::object to_dlpack, py::object from_dlpack, py::object bool_dtype,
                             py::object uint8_dtype)
    : to_dlpack_(std::move(to_dlpack)),
      from_dlpack_(std::move(from_dlpack)),
      bool_(std::move(bool_dtype)),
      uint8_(std::move(uint8_dtype)),
      detach_("detach"),
      view_("view"),
      clone_("clone"),
      dtype_("dtype"),
      requires_grad_("requires_grad") {}

std::vector<Tensor> TorchCrossing::inputs(const py::sequence& tensors,
                                          const std::vector<std::string>& names,
                                          const std::vector<char>& viewed) const {
  std::vector<Tensor> out;
  const size_t n = tensors.size();
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    py::object alias = tensors[k];
    if ((k < viewed.size() && viewed[k]) || get(alias, requires_grad_).ptr() == Py_True)
      alias = call_method(alias, detach_);
    const bool is_bool = get(alias, dtype_).is(bool_);
    if (is_bool) alias = call_method(alias, view_, uint8_);
    py::object capsule = call(to_dlpack_, alias);
    out.push_back(tensor_from_dlpack(
        capsule.cast<py::capsule>(),
        k < names.size() ? "input '" + names[k] + "'" : "input " + std::to_string(k),
        is_bool ? std::optional<DType>(DType::kBool) : std::nullopt));
  }
  return out;
}

py::object TorchCrossing::result(const CallResult& r) const {
  if (r.user_input >= 0) return py::int_(r.user_input);
  if (!r.state_target.empty()) return py::str(r.state_target);
  py::object t = call(from_dlpack_, tensor_to_dlpack(r.fresh));
  if (r.fresh.dtype() == DType::kBool) t = call_method(t, view_, bool_);
  return r.context_owned ? call_method(t, clone_) : t;
}

void bind_torch_crossing(py::module_& m) {
  py::class_<TorchCrossing>(m, "TorchCrossing")
      .def(py::init<py::object, py::object, py::object, py::object>(), py::arg("to_dlpack"),
           py::arg("from_dlpack"), py::arg("bool_dtype"), py::arg("uint8_dtype"))
      .def(
          "call",
          [](const TorchCrossing& self, CompiledGraph& graph, const py::sequence& tensors,
             uintptr_t stream) {
            std::vector<Tensor> inputs =
                self.inputs(tensors, graph.user_input_names(), graph.user_input_viewed());
            std::vector<CallResult> results;
            {
              py::gil_scoped_release release;
              results = graph.call(inputs, reinterpret_cast<void*>(stream));
            }
            py::list out(results.size());
            for (size_t j = 0; j < results.size(); ++j) out[j] = self.result(results[j]);
            return out;
          },
          py::arg("graph"), py::arg("tensors"), py::arg("stream") = 0);
}

}  // namespace inplace::python
