#include "version_watch.h"

#include <cstring>

#include "raw_words.h"

namespace py = pybind11;

namespace inplace::python {
namespace {

uint32_t u32_at(const void* base, size_t offset) {
  return value_at<uint32_t>(base, offset);
}

const char* impl_of(const py::handle& tensor, size_t impl_in_object) {
  return reinterpret_cast<const char*>(word_at(tensor.ptr(), impl_in_object));
}

int64_t attribute_version(const py::handle& tensor) {
  return tensor.attr("_version").cast<int64_t>();
}

}  // namespace

// The counter's pointer is the one word of the TensorImpl (before its sizes) that the probe
// shares with its detached alias and that differs between the probe and each of two `.data`
// aliases, and between those two (each holds a counter of its own): storage, sizes and flags are
// the same in all four, the Python object's slot differs between the probe and its alias. In the
// counter, the version is the 32-bit word that reads 7, then 8 after one in-place op.
VersionLayout calibrate_versions(const TensorLayout& tensors, const py::object& probe,
                                 const py::object& detached, const py::object& data_a,
                                 const py::object& data_b) {
  VersionLayout l;
  if (!tensors.ok || attribute_version(probe) != 7) return l;
  const char* p = impl_of(probe, tensors.impl_in_object);
  const char* d = impl_of(detached, tensors.impl_in_object);
  const char* a = impl_of(data_a, tensors.impl_in_object);
  const char* b = impl_of(data_b, tensors.impl_in_object);
  size_t found = 0;
  int candidates = 0;
  for (size_t at = kWord; at < tensors.sizes_in_impl; at += kWord) {
    uintptr_t wp = word_at(p, at), wa = word_at(a, at), wb = word_at(b, at);
    if (wp == 0 || wp % kWord || wp != word_at(d, at) || wa == wp || wb == wp || wa == wb ||
        wa == 0 || wb == 0)
      continue;
    found = at;
    ++candidates;
  }
  if (candidates != 1) return l;
  const char* counter = reinterpret_cast<const char*>(word_at(p, found));
  // The counter object: its vtable, refcounts (one combined word or two), the version.
  constexpr size_t kScan = 4 * kWord;
  std::vector<size_t> sevens;
  for (size_t at = kWord; at + 4 <= kScan; at += 4)
    if (u32_at(counter, at) == 7) sevens.push_back(at);
  probe.attr("add_")(0);
  if (attribute_version(probe) != 8) return l;
  size_t version = 0;
  for (size_t at : sevens)
    if (u32_at(counter, at) == 8) {
      if (version) return l;  // two words moved: not understood
      version = at;
    }
  if (!version) return l;
  l.impl_in_object = tensors.impl_in_object;
  l.counter_in_impl = found;
  l.version_in_counter = version;
  l.impl_vtable = word_at(p, 0) ? reinterpret_cast<const void*>(word_at(p, 0)) : nullptr;
  l.ok = l.impl_vtable != nullptr && word_at(a, 0) == word_at(p, 0);
  return l;
}

VersionWatch::VersionWatch(const VersionLayout& layout, const py::dict& state,
                           const py::list& targets)
    : layout_(layout), state_(state), version_name_(py::str("_version")) {
  for (auto key : targets) {
    Record r;
    r.key = py::reinterpret_borrow<py::object>(key);
    r.tensor = state_[r.key];
    if (layout_.ok) {
      const char* impl = impl_of(r.tensor, layout_.impl_in_object);
      // A dense TensorImpl (a Parameter's too); a subclass's impl takes the attribute. The raw
      // read must agree with the attribute, or the tensor takes the attribute.
      if (impl && reinterpret_cast<const void*>(word_at(impl, 0)) == layout_.impl_vtable) {
        r.impl = impl;
        if (version_of(r) != attribute_version(r.tensor)) r.impl = nullptr;
      }
    }
    r.version = version_of(r);
    records_.push_back(std::move(r));
  }
}

// The TensorImpl is re-read from the object each time (a Python tensor keeps its impl for life,
// but nothing is assumed): r holds the tensor, so the impl and its counter are alive.
int64_t VersionWatch::version_of(const Record& r) const {
  if (!r.impl) return attribute_version(r.tensor);
  const char* impl = impl_of(r.tensor, layout_.impl_in_object);
  const char* counter = reinterpret_cast<const char*>(word_at(impl, layout_.counter_in_impl));
  return u32_at(counter, layout_.version_in_counter);
}

py::list VersionWatch::moved() {
  py::list out;
  for (Record& r : records_) {
    PyObject* now = PyDict_GetItemWithError(state_.ptr(), r.key.ptr());
    if (now != r.tensor.ptr()) {
      PyErr_Clear();
      out.append(py::make_tuple(r.key, true));
      continue;
    }
    const int64_t v = version_of(r);
    if (v != r.version) {
      r.version = v;
      out.append(py::make_tuple(r.key, false));
    }
  }
  return out;
}

size_t VersionWatch::raw_tensors() const {
  size_t n = 0;
  for (const Record& r : records_) n += r.impl != nullptr;
  return n;
}

int VersionWatch::traverse(visitproc visit, void* arg) const {
  Py_VISIT(state_.ptr());
  for (const Record& r : records_) {
    Py_VISIT(r.key.ptr());
    Py_VISIT(r.tensor.ptr());
  }
  return 0;
}

void VersionWatch::clear() {
  records_.clear();
  state_ = py::dict();
}

void bind_version_watch(py::module_& m) {
  py::class_<VersionLayout>(m, "VersionLayout").def_readonly("ok", &VersionLayout::ok);
  m.def("calibrate_versions", &calibrate_versions, py::arg("tensors"), py::arg("probe"),
        py::arg("detached"), py::arg("data_a"), py::arg("data_b"));
  py::class_<VersionWatch>(m, "VersionWatch", gc_type_setup<VersionWatch>())
      .def(py::init<const VersionLayout&, const py::dict&, const py::list&>(), py::arg("layout"),
           py::arg("state"), py::arg("targets"))
      .def("moved", &VersionWatch::moved)
      .def_property_readonly("raw_tensors", &VersionWatch::raw_tensors);
}

}  // namespace inplace::python
