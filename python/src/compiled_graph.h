// One compiled graph as the Python package holds it: the graph, the engine built from it as a
// one-method program (`forward`) and a session of it. The state bindings (parameters, buffers,
// constants: the module's own tensors) are the program's caller-owned state, bound to those
// tensors once (Session::bind_state, never copied); a mutated user input is caller-owned state
// passed with the call. A call is Session::run with the user inputs.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "compiler/compile.h"
#include "engine/binding_checks.h"
#include "engine/context_options.h"
#include "interpreter/interpreter.h"
#include "program/session.h"

namespace inplace::python {

// One result of a call: a fresh tensor, or the very tensor bound to an input (user input k,
// or the state entry named by target) because the engine wrote its value there.
struct CallResult {
  Tensor fresh;
  // `fresh` is a view of a device context's own output buffer, rewritten by its next call: the
  // Python side hands the caller a copy made by torch (its caching allocator, the call's stream),
  // unless the caller asked for the buffers themselves (CompiledGraph::set_copy_outputs).
  bool context_owned = false;
  int user_input = -1;
  std::string state_target;
};

class CompiledGraph {
 public:
  // `user_inputs`: one per user placeholder, in graph order; `state`: target -> tensor for
  // every parameter / buffer / constant placeholder of the signature (borrowed, never copied).
  CompiledGraph(std::unique_ptr<Graph> graph, std::vector<Tensor> user_inputs, State state,
                const CompileOptions& options);
  // A saved engine. `state` (binding name -> tensor: what an engine file's state file holds)
  // is its state, bound once like a compiled module's (borrowed, never copied); every other
  // binding is a user input, in binding order. Errors name a binding the engine lacks.
  explicit CompiledGraph(std::shared_ptr<const Engine> engine, State state = {});

  // Binds the user inputs (errors name the input) and runs the engine; returns the user
  // outputs in flattened order. Signature mutations are written into their tensors. On a GPU
  // engine the kernels are enqueued on `stream` (a cudaStream_t; the caller's torch stream).
  std::vector<CallResult> call(const std::vector<Tensor>& user_inputs, void* stream = nullptr);

  // Binds `t` where the state entry `target` was bound (a parameter or buffer the caller
  // replaced: same shape and dtype, checked by the binding); the entry then holds `t`. A
  // binding a failed call left partly updated is usable again once rebound.
  void rebind_state(const std::string& target, const Tensor& t);
  // The state entries the engine prepares copies from (Plan::prepared: GPT-2's Conv1D weights
  // transposed), and the call that says one was written in place (Session::state_written).
  std::vector<std::string> prepared_state() const;
  void state_written(const std::string& target);
  // Accepts the state a failed call left partly updated (ExecutionContext::reset).
  void reset();
  // False: a GPU engine's results are its own output buffers, rewritten by its next call (as
  // torch.compile's CUDA graphs return theirs), not copies (default true: each call's results
  // are the caller's). The cpu's results are fresh tensors either way.
  void set_copy_outputs(bool copy) { copy_outputs_ = copy; }
  bool copy_outputs() const { return copy_outputs_; }
  // The context's backend options (apply_backend_options): returns the keys its backend does
  // not take, left out.
  std::vector<std::string> set_backend_options(const BackendOptions& options);
  // The threads the engine's host kernels share (the `threads` backend option; default 1).
  int threads() const;
  // What the context counted (stats_map: calls, graph captures and replays, ...).
  std::map<std::string, int64_t> stats() const;
  // What a failed call left partly updated: user input names and state targets.
  std::vector<std::string> partly_updated() const;
  // What the engine writes: user inputs (indices) and state entries (targets), in place or
  // written back.
  std::vector<int> written_user_inputs() const;
  std::vector<std::string> written_state() const;

  const Engine& engine() const { return *engine_; }
  // The one-method program (`forward`) the calls run on this object's session.
  std::shared_ptr<const Program> program() const { return program_; }
  std::shared_ptr<const Engine> engine_ptr() const { return engine_; }
  const std::vector<std::string>& user_input_names() const { return user_names_; }
  // Per user input: whether an engine output may view its memory (such a result keeps that
  // memory alive, as eager's view does).
  const std::vector<char>& user_input_viewed() const { return user_input_viewed_; }
  int num_user_outputs() const;
  // The flat engine outputs that are user outputs (the others are signature mutations).
  std::vector<int> user_outputs() const;
  // output index (user outputs, flattened) -> (user input index or -1, state target, kind).
  struct AliasEntry {
    int output = 0;
    int user_input = -1;
    std::string state_target;
    std::string kind;
  };
  std::vector<AliasEntry> aliased_io() const;
  std::string graph_text() const;    // the graph as written (FX-like listing)
  std::string lowered_text() const;  // the functional graph the engine was built from
  // Binding name -> state target for the state bindings (what a saved engine needs fed).
  std::map<std::string, std::string> state_bindings() const;
  // The tensor bound for state entry `target` (errors name a target that is none).
  const Tensor& state_tensor(const std::string& target) const;

 private:
  bool copy_outputs_ = true;
  // The memory of the results the last call handed out uncopied (copy_outputs_ off, a GPU
  // engine): the context's own output buffers, which the next call rewrites.
  std::vector<MemorySpan> handed_out_;
  // Where each engine input binding comes from.
  struct Source {
    int user_input = -1;       // index into the call's user inputs
    std::string state_target;  // else a state entry
  };
  // Where each flat engine output goes: a user output, or (a signature mutation) the new
  // value of a user input or of a state entry.
  struct Sink {
    bool user_output = true;
    int user_input = -1;
    std::string state_target;
  };
  CallResult result_for(int flat, const Tensor& t, const std::vector<Tensor>& inputs) const;
  // The engine as program_ (program_from_engine: every state binding caller-owned state under
  // its binding name) and session_, with every state binding bound to its tensor.
  void start_session();

  std::unique_ptr<Graph> graph_;
  CompiledProgram compiled_;
  std::shared_ptr<const Engine> engine_;
  std::shared_ptr<const Program> program_;
  std::unique_ptr<Session> session_;
  State state_;
  std::vector<Source> sources_;
  std::vector<int> user_binding_;  // user input k -> engine binding index
  std::vector<std::string> user_names_;
  std::vector<char> user_input_viewed_;
  std::vector<Sink> sinks_;
  // Python threads share one compiled program (and its session): calls run one at a time.
  mutable std::mutex call_mutex_;
};

}  // namespace inplace::python
