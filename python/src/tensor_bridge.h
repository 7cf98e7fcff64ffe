// Tensors across the Python boundary by DLPack, never copied: a torch tensor's capsule becomes
// an inplace::Tensor over the same memory, and an engine's result becomes a capsule torch
// wraps (the capsule keeps the result's storage alive).
#pragma once
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "core/tensor.h"

namespace inplace::python {

// A view of the capsule's memory (shape, strides, offset as the tensor has them). The capsule
// is marked used and its producer reference moves into the result's storage: the torch
// tensor's memory lives until the last inplace tensor viewing it (a bound input, a result that
// is a view of it) is gone, whatever the caller drops meanwhile. The producer's deleter may then
// run without the GIL (torch's does not need it). `as_dtype` reinterprets same-width elements
// (torch 1.13 has no DLPack bool, so bool tensors cross as uint8). `what` names the tensor in
// errors ("input 'cache'").
Tensor tensor_from_dlpack(const pybind11::capsule& capsule, const std::string& what,
                          std::optional<DType> as_dtype = std::nullopt);

// A "dltensor" capsule over `t`'s memory; it holds `t`'s storage until torch frees it. bool
// tensors are described as uint8 (the Python side views them back as bool).
pybind11::capsule tensor_to_dlpack(const Tensor& t);

// Tensors cross as (capsule, is_bool) pairs (torch 1.13 has no DLPack bool): the pair's tensor,
// and a tensor as such a pair.
Tensor tensor_from_pair(const pybind11::handle& pair, const std::string& what);
// (capsule, is_bool, context_owned): context_owned marks a view of a device context's own
// buffer, which Python copies (torch.clone on the call's stream) before the caller sees it.
pybind11::tuple tensor_to_pair(const Tensor& t, bool context_owned = false);

}  // namespace inplace::python
