// The version counters torch keeps per tensor (bumped by every in-place op on the tensor or a
// view of it: `mul_`, `copy_`, `load_state_dict`, an optimizer step), read at every call of a
// compiled module for the state the engine prepares copies from (Plan::prepared: GPT-2's
// Conv1D weights transposed), without linking libtorch. Where the running torch's layout is
// known (VersionLayout, calibrated once on probe tensors against torch's own `_version`), a read
// is three loads; otherwise the tensor's `_version` attribute.
#pragma once
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "state_check.h"

namespace inplace::python {

// Where torch keeps a dense tensor's version (byte offsets), found by probing; `ok` false where
// the probe did not match: every tensor then takes the attribute.
struct VersionLayout {
  bool ok = false;
  size_t impl_in_object = 0;      // the TensorImpl* in the Python tensor object
  size_t counter_in_impl = 0;     // the VersionCounter* in the TensorImpl
  size_t version_in_counter = 0;  // its uint32 version
  const void* impl_vtable = nullptr;
};

// `probe`: a tensor at version 7 with no autograd history; `detached`: probe.detach() (the same
// counter); `data_a`, `data_b`: probe.data, twice (a counter each). Bumps probe's version once.
VersionLayout calibrate_versions(const TensorLayout& tensors, const pybind11::object& probe,
                                 const pybind11::object& detached, const pybind11::object& data_a,
                                 const pybind11::object& data_b);

class VersionWatch {
 public:
  // `targets`: the keys of `state` (target -> tensor) to watch, at their current versions.
  VersionWatch(const VersionLayout& layout, const pybind11::dict& state,
               const pybind11::list& targets);
  // [(target, replaced)]: each watched target whose tensor in `state` is another object now
  // (replaced: True; the watch is then stale for it), or whose version moved since the last
  // call (False; recorded as seen).
  pybind11::list moved();
  size_t raw_tensors() const;  // how many take the raw path (tests)
  int traverse(visitproc visit, void* arg) const;
  void clear();

 private:
  struct Record {
    pybind11::object key, tensor;
    const char* impl = nullptr;  // null: the attribute path
    int64_t version = 0;
  };
  int64_t version_of(const Record& r) const;

  VersionLayout layout_;
  pybind11::dict state_;
  std::vector<Record> records_;
  pybind11::object version_name_;
};

void bind_version_watch(pybind11::module_& m);

}  // namespace inplace::python
