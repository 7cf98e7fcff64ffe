// Program: named methods (`prefill`, `decode`) over one state table and one copy of the
// weights. Each method is an engine compiled from its own graph; an input binding whose name
// is in the state table is that state (the same storage in every method), every other input
// binding is a plain input the caller passes per call. Immutable once assembled: any number of
// threads and sessions share one program.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "program/state_table.h"

namespace inplace {

class Session;

struct Method {
  std::string name;
  std::shared_ptr<const Engine> engine;
  // By engine input binding: the state entry it is, or -1 for a plain input.
  std::vector<int> state_of_input;
  // The engine inputs the caller passes on every call, in binding order: plain inputs and
  // caller-owned state. Runtime-owned state is bound by the session.
  std::vector<int> call_inputs;
  std::string call_input_names() const;  // 'x', 'pos' (or "(none)")
};

class Program : public std::enable_shared_from_this<Program> {
 public:
  // Checks that the methods agree with the state table: unique method names; each state
  // binding has the entry's shape and dtype and no dynamic dim; every input a method writes is
  // state; every entry is used by some method. Errors name the method, binding and entry.
  // `metadata`: what a frontend keeps with the program (the Python call convention), saved in
  // the file: keys without '=' or a newline, values without a newline.
  static std::shared_ptr<const Program> assemble(std::string name,
                                                 std::vector<std::shared_ptr<const Engine>> engines,
                                                 std::vector<std::string> method_names,
                                                 StateTable state,
                                                 std::map<std::string, std::string> metadata = {});

  const std::string& name() const { return name_; }
  // Where every method runs and every session holds its runtime-owned state (one device a
  // program: assemble() refuses methods of different devices).
  Device device() const { return methods_.front().engine->device(); }
  const std::vector<Method>& methods() const { return methods_; }
  // Throws kNotFound naming the method and listing every method.
  int method_index(const std::string& method) const;
  const Method& method(const std::string& method) const { return methods_[method_index(method)]; }
  const StateTable& state() const { return state_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The weights of every method, each distinct tensor once (methods share them).
  struct Weight {
    std::string name;
    Tensor tensor;
  };
  const std::vector<Weight>& weights() const { return weights_; }
  int64_t weight_bytes() const;
  // Methods (bindings with their roles, aliased I/O), the state table and the weights:
  // `inplace inspect`.
  std::string describe() const;

  // A session: runtime-owned state allocated from the initial values (session.h).
  std::unique_ptr<Session> new_session() const;

 private:
  Program() = default;
  std::string name_;
  std::vector<Method> methods_;
  StateTable state_;
  std::vector<Weight> weights_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace inplace
