// What the extension's raw readers of torch's objects share (state_check.cpp, version_watch.cpp):
// words read at byte offsets, and the cyclic GC's view of a pybind11 class that holds Python
// objects (T::traverse and T::clear).
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>

namespace inplace::python {

inline constexpr size_t kWord = sizeof(void*);

inline uintptr_t word_at(const void* base, size_t offset) {
  uintptr_t w;
  std::memcpy(&w, static_cast<const char*>(base) + offset, kWord);
  return w;
}

inline const char* pointer_at(const void* base, size_t offset) {
  return reinterpret_cast<const char*>(word_at(base, offset));
}

template <typename V>
V value_at(const void* base, size_t offset) {
  V v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof v);
  return v;
}

// The instance's T, or null while its constructor runs (a collection it triggers traverses the
// instance already).
template <typename T>
T* constructed(PyObject* self) {
  auto vh = reinterpret_cast<pybind11::detail::instance*>(self)->get_value_and_holder();
  return vh.holder_constructed() ? vh.value_ptr<T>() : nullptr;
}

// The class takes part in the cyclic GC: a module that holds its compiled self makes a cycle
// through what T holds.
template <typename T>
pybind11::custom_type_setup gc_type_setup() {
  return pybind11::custom_type_setup([](PyHeapTypeObject* heap_type) {
    PyTypeObject* type = &heap_type->ht_type;
    type->tp_flags |= Py_TPFLAGS_HAVE_GC;
    type->tp_traverse = [](PyObject* self, visitproc visit, void* arg) {
      Py_VISIT(Py_TYPE(self));
      const T* held = constructed<T>(self);
      return held ? held->traverse(visit, arg) : 0;
    };
    type->tp_clear = [](PyObject* self) {
      if (T* held = constructed<T>(self)) held->clear();
      return 0;
    };
  });
}

}  // namespace inplace::python
