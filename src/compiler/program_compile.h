// compile_program(): one engine per method, each from its own graph, over one state table and
// one copy of the weights. State is found, not declared: every buffer (get_attr target) a
// method mutates is state named by the module's dotted name, runtime-owned unless listed in
// `caller_owned`; every plain input a method mutates is caller-owned state named by its input.
// A method that only reads some state reads the state, never a frozen copy of its initial
// value (the buffer becomes an input binding of that method too).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "program/program.h"

namespace inplace {

struct MethodSource {
  std::string name;
  const Graph* graph = nullptr;
  // One per placeholder, in graph order (real tensors or metas): they fix the binding shapes.
  std::vector<Tensor> example_inputs;
  CompileOptions options;  // per method: --dynamic, --value-range, --mutated-input, alias
};

struct ProgramOptions {
  std::string name = "program";
  // Buffers the caller owns (by dotted name): passed by name on every call of every method
  // that uses them and updated in place; their initial value is still stored in the program.
  std::vector<std::string> caller_owned;
  // Plain inputs a method mutates that the runtime owns instead (a model traced with its
  // caches as arguments): each session allocates them, starting from zeros.
  std::vector<std::string> runtime_owned;
  // Where every method runs (`--device cuda`), over each method's CompileOptions::device; a
  // method whose ops have no kernel there is refused naming the method and the op. Off the host
  // the weights are uploaded once for all methods, and sessions hold their state there.
  std::optional<Device> device;
};

std::shared_ptr<const Program> compile_program(const std::vector<MethodSource>& methods,
                                               const ProgramOptions& options = {});

}  // namespace inplace
