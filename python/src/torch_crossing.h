// A call's tensors across the boundary with torch's own DLPack functions called from here: the
// inputs as torch tensors in, the results as torch tensors out, with no Python frame, capsule
// tuple or second round trip per tensor. The crossing is the one tensor_bridge.h describes
// (DLPack, never a copy), and the extension still links no libtorch: Python hands torch's
// functions over once, as a TorchCrossing it keeps.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "compiled_graph.h"
#include "core/tensor.h"

namespace inplace::python {

class TorchCrossing {
 public:
  // torch's to_dlpack and from_dlpack (torch._C's, what torch.utils.dlpack calls), and the
  // dtype objects torch.bool and torch.uint8.
  TorchCrossing(pybind11::object to_dlpack, pybind11::object from_dlpack,
                pybind11::object bool_dtype, pybind11::object uint8_dtype);

  // Each torch tensor of `tensors` as an inplace tensor over its memory, a bool tensor crossing
  // as uint8 (torch 1.13 has no DLPack bool). The capsule holds the tensor it is made from; for
  // an input a result may view (`viewed`, per input) or one that requires grad, that is a
  // detached alias, so that `x.data = y` on the caller's object frees nothing the result reads
  // (the engine reads an input during its call only: the next call binds anew). Errors name the
  // input ("input 'name'"); torch's own errors propagate.
  std::vector<Tensor> inputs(const pybind11::sequence& tensors,
                             const std::vector<std::string>& names,
                             const std::vector<char>& viewed) const;

  // A call's result: the user input index (int) or state target (str) it is, or a torch tensor
  // over the engine's memory, cloned by torch where it views a device context's own buffer (on
  // the current stream, from torch's caching allocator: no call waits for the device).
  pybind11::object result(const CallResult& r) const;

 private:
  pybind11::object to_dlpack_, from_dlpack_, bool_, uint8_;
  pybind11::str detach_, view_, clone_, dtype_, requires_grad_;
};

// inplace._C.TorchCrossing(...) and its call(compiled_graph, tensors, stream): the inputs in,
// CompiledGraph::call without the GIL, the results out, as a list.
void bind_torch_crossing(pybind11::module_& m);

}  // namespace inplace::python
