// Functional mode: run a program after the lowering passes and write each mutated input and
// buffer back through the io_map, so the caller sees exactly what eager mode leaves behind.
#pragma once
#include <map>
#include <string>

#include "interpreter/interpreter.h"
#include "passes/functional_program.h"

namespace inplace {

// Runs `program` on `inputs` (placeholder name -> value) and `state` (buffers) in the eager
// interpreter, then copies every value the io_map names into its input tensor or buffer. The
// result holds only the outputs the original program had.
RunOutput run_functional(const FunctionalProgram& program,
                         const std::map<std::string, Value>& inputs, State* state);

}  // namespace inplace
