#include "state_check.h"

#include <cstring>

#include "raw_words.h"

namespace py = pybind11;

namespace inplace::python {
namespace {

int64_t int_at(const void* base, size_t offset) {
  return value_at<int64_t>(base, offset);
}

uintptr_t address_of(const py::handle& obj, const char* attr) {
  return obj.attr(attr).cast<uintptr_t>();
}

// Where `probe`'s TensorImpl keeps its dims count, sizes, strides, offset and numel: the
// first word (scanning up from the refcounts) that starts that run. Stops at the match, so
// it reads past no field; gives up after 48 words.
bool find_sizes(const char* impl, TensorLayout& l) {
  const int64_t sizes[] = {3, 5, 7}, strides[] = {211, 37, 3};
  for (size_t w = 3; w < 48; ++w) {
    size_t at = w * kWord;
    if (int_at(impl, at) != 3) continue;
    bool same = true;
    for (int d = 0; d < 3; ++d) same = same && int_at(impl, at + (1 + d) * kWord) == sizes[d];
    if (!same) continue;
    for (int64_t inline_dims = 3; inline_dims <= 8; ++inline_dims) {
      size_t s = at + (1 + inline_dims) * kWord;
      bool match = true;
      for (int d = 0; d < 3; ++d) match = match && int_at(impl, s + d * kWord) == strides[d];
      size_t offset = at + (1 + 2 * inline_dims) * kWord;
      if (!match || int_at(impl, offset) != 101 || int_at(impl, offset + kWord) != 105) continue;
      l.sizes_in_impl = at;
      l.inline_dims = inline_dims;
      l.region_bytes = (offset + 3 * kWord) - at;  // offset, numel, the dtype's word
      return true;
    }
  }
  return false;
}

}  // namespace

TensorLayout calibrate_tensor_layout(const py::object& probe, const py::object& twin,
                                     const py::tuple& types) {
  TensorLayout l;
  const char* object = reinterpret_cast<const char*>(probe.ptr());
  uintptr_t impl_address = address_of(probe, "_cdata");
  size_t object_words = static_cast<size_t>(Py_TYPE(probe.ptr())->tp_basicsize) / kWord;
  for (size_t w = 2; w < object_words && !l.impl_in_object; ++w)
    if (word_at(object, w * kWord) == impl_address) l.impl_in_object = w * kWord;
  if (!l.impl_in_object) return l;
  const char* impl = reinterpret_cast<const char*>(impl_address);
  if (!find_sizes(impl, l)) return l;
  py::object storage = py::hasattr(probe, "untyped_storage")
                           ? probe.attr("untyped_storage")()  // torch 2
                           : probe.attr("storage")().attr("_storage");
  uintptr_t storage_address = address_of(storage, "_cdata");
  for (size_t at = 3 * kWord; at < l.sizes_in_impl && !l.storage_in_impl; at += kWord)
    if (word_at(impl, at) == storage_address) l.storage_in_impl = at;
  if (!l.storage_in_impl) return l;
  const char* storage_impl = reinterpret_cast<const char*>(storage_address);
  uintptr_t data = storage.attr("data_ptr")().cast<uintptr_t>();
  for (size_t at = 3 * kWord; at < 8 * kWord && !l.data_in_storage; at += kWord)
    if (word_at(storage_impl, at) == data) l.data_in_storage = at;
  if (!l.data_in_storage || data + 101 * 4 != probe.attr("data_ptr")().cast<uintptr_t>()) return l;
  // The twin differs from the probe in its dtype only: that must show in the region's last
  // word, and nowhere else in the region.
  const char* twin_impl = reinterpret_cast<const char*>(address_of(twin, "_cdata"));
  size_t last = l.sizes_in_impl + l.region_bytes - kWord;
  if (std::memcmp(impl + l.sizes_in_impl, twin_impl + l.sizes_in_impl, last - l.sizes_in_impl) ||
      word_at(impl, last) == word_at(twin_impl, last))
    return l;
  l.impl_vtable = pointer_at(impl, 0);
  l.storage_vtable = pointer_at(storage_impl, 0);
  if (l.impl_vtable != pointer_at(twin_impl, 0)) return l;
  l.exact_types = types;
  l.ok = true;
  return l;
}

StateCheck::StateCheck(const TensorLayout& layout, const py::list& links, const py::list& tensors)
    : layout_(layout),
      data_ptr_name_(py::str("data_ptr")),
      shape_name_(py::str("shape")),
      stride_name_(py::str("stride")),
      dtype_name_(py::str("dtype")) {
  auto dict_of = [](const py::tuple& t) {
    if (!PyDict_Check(t[0].ptr()))
      throw py::type_error("[state_check] a record's store is no dict");
    return t;
  };
  for (auto l : links) {
    auto t = dict_of(l.cast<py::tuple>());
    links_.push_back({t[0], t[1], t[2]});
  }
  for (auto item : tensors) {
    auto t = dict_of(item.cast<py::tuple>());
    Record r{t[0], t[1], t[2], t[3], t[4], t[5], t[6], nullptr, nullptr, nullptr, {}};
    take_raw(r);
    records_.push_back(std::move(r));
  }
}

// Reads r.tensor raw where the layout allows and the words read agree with its key as torch's
// accessors gave it (r.data_ptr, r.shape, r.stride); otherwise leaves r on the accessor path.
void StateCheck::take_raw(Record& r) const {
  if (!layout_.ok) return;
  bool exact = false;
  for (auto type : layout_.exact_types)
    exact = exact || reinterpret_cast<PyObject*>(Py_TYPE(r.tensor.ptr())) == type.ptr();
  if (!exact) return;
  const char* impl = pointer_at(r.tensor.ptr(), layout_.impl_in_object);
  if (!impl || pointer_at(impl, 0) != layout_.impl_vtable) return;
  const char* storage = pointer_at(impl, layout_.storage_in_impl);
  if (!storage || pointer_at(storage, 0) != layout_.storage_vtable) return;
  auto shape = r.shape.cast<py::tuple>(), stride = r.stride.cast<py::tuple>();
  int64_t dims = int_at(impl, layout_.sizes_in_impl);
  if (dims != static_cast<int64_t>(shape.size()) || dims > layout_.inline_dims) return;
  size_t sizes = layout_.sizes_in_impl + kWord;
  size_t strides = sizes + layout_.inline_dims * kWord;
  for (int64_t d = 0; d < dims; ++d)
    if (int_at(impl, sizes + d * kWord) != shape[d].cast<int64_t>() ||
        int_at(impl, strides + d * kWord) != stride[d].cast<int64_t>())
      return;
  int64_t offset = int_at(impl, strides + layout_.inline_dims * kWord);
  uintptr_t data = word_at(storage, layout_.data_in_storage);
  int64_t element = r.tensor.attr("element_size")().cast<int64_t>();
  if (data + offset * element != r.data_ptr.cast<uintptr_t>()) return;
  r.impl = impl;
  r.storage = storage;
  r.data = reinterpret_cast<const void*>(data);
  const auto* region = reinterpret_cast<const unsigned char*>(impl + layout_.sizes_in_impl);
  r.region.assign(region, region + layout_.region_bytes);
}

// r.tensor is alive (r holds it) and is the dict's; its TensorImpl lives while it does, and the
// StorageImpl is read only once the TensorImpl is seen to still hold it.
bool StateCheck::raw_unchanged(const Record& r) const {
  const char* impl = pointer_at(r.tensor.ptr(), layout_.impl_in_object);
  if (impl != r.impl || pointer_at(impl, layout_.storage_in_impl) != r.storage) return false;
  if (std::memcmp(impl + layout_.sizes_in_impl, r.region.data(), r.region.size())) return false;
  return pointer_at(r.storage, layout_.data_in_storage) == r.data;
}

bool StateCheck::accessors_unchanged(const Record& r) const {
  PyObject* self = r.tensor.ptr();
  auto equal = [](PyObject* now, PyObject* then) {
    if (!now) return false;
    int same = PyObject_RichCompareBool(now, then, Py_EQ);
    Py_DECREF(now);
    return same == 1;
  };
  if (!equal(PyObject_VectorcallMethod(data_ptr_name_.ptr(), &self,
                                       1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr),
             r.data_ptr.ptr()) ||
      !equal(PyObject_GetAttr(self, shape_name_.ptr()), r.shape.ptr()) ||
      !equal(PyObject_VectorcallMethod(stride_name_.ptr(), &self,
                                       1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr),
             r.stride.ptr()))
    return false;
  PyObject* dtype = PyObject_GetAttr(self, dtype_name_.ptr());
  Py_XDECREF(dtype);
  return dtype == r.dtype.ptr();
}

bool StateCheck::unchanged() const {
  if (cleared_) return false;
  for (const Link& l : links_)
    if (PyDict_GetItemWithError(l.dict.ptr(), l.key.ptr()) != l.child.ptr()) {
      PyErr_Clear();
      return false;
    }
  for (const Record& r : records_) {
    if (PyDict_GetItemWithError(r.dict.ptr(), r.key.ptr()) != r.tensor.ptr()) {
      PyErr_Clear();
      return false;
    }
    if (!(r.impl ? raw_unchanged(r) : accessors_unchanged(r))) {
      PyErr_Clear();  // an accessor that raised: the full walk says what is wrong
      return false;
    }
  }
  return true;
}

size_t StateCheck::raw_tensors() const {
  size_t n = 0;
  for (const Record& r : records_) n += r.impl != nullptr;
  return n;
}

int StateCheck::traverse(visitproc visit, void* arg) const {
  for (const Link& l : links_) {
    Py_VISIT(l.dict.ptr());
    Py_VISIT(l.key.ptr());
    Py_VISIT(l.child.ptr());
  }
  for (const Record& r : records_)
    for (const py::object* o :
         {&r.dict, &r.key, &r.tensor, &r.data_ptr, &r.shape, &r.stride, &r.dtype})
      Py_VISIT(o->ptr());
  return 0;
}

void StateCheck::clear() {
  cleared_ = true;
  links_.clear();
  records_.clear();
}

void bind_state_check(py::module_& m) {
  py::class_<TensorLayout>(m, "TensorLayout").def_readonly("ok", &TensorLayout::ok);
  m.def("calibrate_tensor_layout", &calibrate_tensor_layout, py::arg("probe"), py::arg("twin"),
        py::arg("types"));
  py::class_<StateCheck>(m, "StateCheck", gc_type_setup<StateCheck>())
      .def(py::init<const TensorLayout&, const py::list&, const py::list&>(), py::arg("layout"),
           py::arg("links"), py::arg("tensors"))
      .def("unchanged", &StateCheck::unchanged)
      .def_property_readonly("raw_tensors", &StateCheck::raw_tensors);
}

}  // namespace inplace::python
