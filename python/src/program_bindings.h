// Programs and sessions in the extension (python/inplace/program.py wraps them).
#pragma once
#include <pybind11/pybind11.h>

#include <memory>

#include "program/program.h"

namespace inplace::python {

void bind_programs(pybind11::module_& m);
// `program` as an inplace._C.Program (bind_programs registers the type).
pybind11::object program_object(std::shared_ptr<const Program> program);

}  // namespace inplace::python
