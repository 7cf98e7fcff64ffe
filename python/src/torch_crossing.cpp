#include "torch_crossing.h"

#include <optional>

#include "tensor_bridge.h"

namespace py = pybind11;

namespace inplace::python {

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
    if ((k < viewed.size() && viewed[k]) ||
        py::object(alias.attr(requires_grad_)).is(py::handle(Py_True)))
      alias = alias.attr(detach_)();
    const bool is_bool = py::object(alias.attr(dtype_)).is(bool_);
    if (is_bool) alias = alias.attr(view_)(uint8_);
    py::object capsule = to_dlpack_(alias);
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
  py::object t = from_dlpack_(tensor_to_dlpack(r.fresh));
  if (r.fresh.dtype() == DType::kBool) t = t.attr(view_)(bool_);
  return r.context_owned ? t.attr(clone_)() : t;
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
