// Programs and sessions in the extension (python/inplace/program.py wraps them).
#pragma once
#include <pybind11/pybind11.h>

namespace inplace::python {

void bind_programs(pybind11::module_& m);

}  // namespace inplace::python
