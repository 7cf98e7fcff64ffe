// One engine as a one-method program. An engine compiled in process has input bindings that
// hold a module's state (parameters, buffers, constants: the tensors the caller binds once);
// here they become the program's own: each one the engine never writes is a weight (stored
// once, read-only, no longer an input), each one it writes is runtime-owned state whose initial
// value is the tensor given, both under the module's dotted name. Every other input the engine
// writes is caller-owned state (no initial value); the rest are the call's plain inputs. No
// second compile: the engine's plan is rewritten, and the result runs the same steps.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

#include "program/program.h"

namespace inplace {

struct EngineState {
  std::string name;  // the module's dotted name (`layers.0.k_cache`)
  Tensor value;      // its value now: a weight's contents, or the state's initial value
};

struct EngineProgramOptions {
  std::string method = "forward";
  std::map<int, EngineState> state;  // by engine input binding
  // Engine input bindings that are caller-owned state under their own names, with no value:
  // the caller binds its tensors to them once (Session::bind_state), as the Python package's
  // compiled module binds the module's parameters and buffers.
  std::set<int> caller_state;
  std::map<std::string, std::string> metadata;  // Program::metadata()
};

// Errors name the binding: a value whose shape or dtype is not the binding's, a state name
// that is another binding's, a binding both in `state` and in `caller_state`. A binding the engine
// reads element by element for a runtime value, or with a dynamic dim, stays an input bound to
// runtime-owned state.
std::shared_ptr<const Program> program_from_engine(std::shared_ptr<const Engine> engine,
                                                   const EngineProgramOptions& options = {});

}  // namespace inplace
