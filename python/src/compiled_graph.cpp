#include "compiled_graph.h"

#include <algorithm>
#include <set>

#include "compiler/exported_program.h"
#include "core/device_allocator.h"
#include "engine/binding_checks.h"
#include "ir/export_signature.h"

namespace inplace::python {

namespace {

// torch.export lifts some buffers a second time as constants (a tensor attribute that is a
// buffer's memory). Two placeholders over one memory would be two bindings the engine refuses
// to write through; one placeholder, read everywhere, keeps the program's order of reads and
// writes for the reinplacing analysis. Merges every state placeholder whose target (or tensor)
// is an earlier one's into that one.
void merge_aliasing_state(Graph& graph, const State& state) {
  std::vector<SignatureInput> kept;
  for (const SignatureInput& in : graph.signature.inputs) {
    const SignatureInput* same = nullptr;
    if (in.kind != "user_input") {
      auto mine = state.find(in.target);
      for (const SignatureInput& k : kept) {
        if (k.kind == "user_input") continue;
        auto theirs = state.find(k.target);
        bool one_memory = k.target == in.target || (mine != state.end() && theirs != state.end() &&
                                                    mine->second.same_view(theirs->second));
        if (one_memory) {
          same = &k;
          break;
        }
      }
    }
    if (!same) {
      kept.push_back(in);
      continue;
    }
    Node* from = graph.find(in.node);
    Node* to = graph.find(same->node);
    graph.replace_all_uses_with(from, to);
    graph.erase(from);
  }
  graph.signature.inputs = std::move(kept);
}

// The copy-back engine's new value of a mutated input or buffer, written into the caller's
// tensor (on its device; a device copy needs both contiguous, as fresh results are).
void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.device().is_cpu() && src.device().is_cpu()) return dst.copy_from(src);
  IP_CHECK(dst.device() == src.device() && dst.is_contiguous() && src.is_contiguous() &&
               dst.nbytes() == src.nbytes(),
           kInvalidArgument, "[call] the copy-back of a mutated ", dst.device().str(),
           " tensor needs contiguous memory");
  device_allocator(dst.device()).copy_on_device(dst.data_ptr(), src.data_ptr(), src.nbytes());
}

constexpr const char* kMethod = "forward";

}  // namespace

CompiledGraph::CompiledGraph(std::unique_ptr<Graph> graph, std::vector<Tensor> user_inputs,
                             State state, const CompileOptions& options)
    : graph_(std::move(graph)), state_(std::move(state)) {
  merge_aliasing_state(*graph_, state_);
  user_names_ = inplace::user_input_names(*graph_);
  IP_CHECK(user_inputs.size() == user_names_.size(), kInvalidArgument, "[compile] graph '",
           graph_->name, "' takes ", user_names_.size(), " inputs but ", user_inputs.size(),
           " were given");
  GraphInputs inputs;
  for (size_t k = 0; k < user_names_.size(); ++k)
    inputs[user_names_[k]] = Value::from_tensor(user_inputs[k]);
  compiled_ = compile_exported(*graph_, inputs, state_, options);
  engine_ = compiled_.engine;

  // Engine input bindings: the placeholders in graph order, then buffers lifted from get_attr.
  std::vector<Node*> ph = graph_->placeholders();
  sources_.resize(engine_->inputs().size());
  user_binding_.assign(user_names_.size(), -1);
  for (size_t i = 0; i < ph.size(); ++i) {
    const SignatureInput* si = signature_input(*graph_, ph[i]->name);
    if (si && si->kind != "user_input") {
      sources_[i].state_target = si->target;
      continue;
    }
    for (size_t k = 0; k < user_names_.size(); ++k)
      if (user_names_[k] == ph[i]->name) {
        sources_[i].user_input = static_cast<int>(k);
        user_binding_[k] = static_cast<int>(i);
      }
  }
  for (const auto& [index, target] : compiled_.lifted_buffers) {
    sources_[index].state_target = target;
    // A get_attr buffer the caller did not pass: the graph's own constant (kept here).
    if (!state_.count(target)) state_[target] = graph_->constants.at(target);
  }
  start_session();

  const auto& outs = graph_->signature.outputs;
  sinks_.resize(engine_->original_output_count());
  if (outs.size() == sinks_.size()) {
    for (size_t j = 0; j < outs.size(); ++j) {
      if (outs[j].kind == "buffer_mutation") {
        sinks_[j] = {false, -1, outs[j].target};
      } else if (outs[j].kind == "user_input_mutation") {
        sinks_[j].user_output = false;
        for (size_t k = 0; k < user_names_.size(); ++k)
          if (user_names_[k] == outs[j].target) sinks_[j].user_input = static_cast<int>(k);
        IP_ASSERT(sinks_[j].user_input >= 0, "a user_input_mutation names a user input");
      }
    }
  }
}

CompiledGraph::CompiledGraph(std::shared_ptr<const Engine> engine, State state)
    : engine_(std::move(engine)), state_(std::move(state)) {
  const std::vector<Binding>& bindings = engine_->inputs();
  for (const auto& entry : state_) {
    const std::string& name = entry.first;
    IP_CHECK(std::any_of(bindings.begin(), bindings.end(),
                         [&](const Binding& b) { return b.name == name; }),
             kNotFound, "[load] state '", name, "' is no input binding of engine '",
             engine_->name(), "'");
  }
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (state_.count(bindings[i].name)) {
      sources_.push_back({-1, bindings[i].name});
      continue;
    }
    sources_.push_back({static_cast<int>(user_names_.size()), ""});
    user_binding_.push_back(static_cast<int>(i));
    user_names_.push_back(bindings[i].name);
  }
  sinks_.resize(engine_->original_output_count());
  start_session();
}

void CompiledGraph::start_session() {
  const std::vector<Binding>& bindings = engine_->inputs();
  EngineProgramOptions options;
  options.method = kMethod;
  for (size_t i = 0; i < bindings.size(); ++i)
    if (sources_[i].user_input < 0) options.caller_state.insert(static_cast<int>(i));
  user_input_viewed_.assign(user_names_.size(), 0);
  for (const TensorRef& r : engine_->plan().output_refs)
    if (r.buffer.kind == BufferKind::kInput && sources_[r.buffer.index].user_input >= 0)
      user_input_viewed_[sources_[r.buffer.index].user_input] = 1;
  program_ = program_from_engine(engine_, options);
  session_ = program_->new_session();
  for (int i : options.caller_state)
    session_->bind_state(bindings[i].name, state_tensor(sources_[i].state_target));
}

const Tensor& CompiledGraph::state_tensor(const std::string& target) const {
  auto it = state_.find(target);
  IP_CHECK(it != state_.end(), kNotFound, "[compile] no tensor was given for state '", target, "'");
  return it->second;
}

CallResult CompiledGraph::result_for(int flat, const Tensor& t,
                                     const std::vector<Tensor>& inputs) const {
  CallResult r;
  if (std::optional<int> in = engine_->aliased_input(flat)) {
    const Source& s = sources_[*in];
    r.user_input = s.user_input;
    r.state_target = s.state_target;
    return r;
  }
  // An output that is an input itself (`return x`): the caller's tensor, as eager returns it.
  for (size_t k = 0; k < inputs.size(); ++k)
    if (t.same_view(inputs[k])) {
      r.user_input = static_cast<int>(k);
      return r;
    }
  // A GPU context's outputs are its own buffers, rewritten by its next call: the caller gets
  // a tensor of its own, as from a torch op, copied by torch on the call's stream (a copy made
  // here would allocate with cudaMalloc and free with cudaFree, which waits for the whole
  // device: every call would wait for the one before), unless it asked for the buffers.
  r.fresh = t;
  r.context_owned = copy_outputs_ && !engine_->device().is_cpu();
  return r;
}

std::vector<CallResult> CompiledGraph::call(const std::vector<Tensor>& user_inputs, void* stream) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  IP_CHECK(user_inputs.size() == user_names_.size(), kInvalidArgument, "[call] '", engine_->name(),
           "' takes ", user_names_.size(), " inputs but ", user_inputs.size(), " were given");
  // With copy_outputs off, the last call's results are the context's own buffers, which this
  // call rewrites: one passed back as an input would be read while it is written.
  for (size_t k = 0; k < user_inputs.size() && !handed_out_.empty(); ++k) {
    const MemorySpan in = memory_span(user_inputs[k]);
    for (const MemorySpan& out : handed_out_)
      IP_CHECK(!in.overlaps(out), kInvalidArgument, "[call] '", engine_->name(), "': input '",
               user_names_[k],
               "' is (a view of) a result of the previous call, whose memory this call rewrites "
               "(copy_outputs=False): pass a clone of it");
  }
  std::map<std::string, Tensor> given;
  for (size_t k = 0; k < user_inputs.size(); ++k)
    given.emplace(engine_->inputs()[user_binding_[k]].name, user_inputs[k]);
  std::vector<Tensor> outs = session_->run(kMethod, given, stream);
  std::vector<CallResult> results;
  handed_out_.clear();
  for (size_t j = 0; j < sinks_.size(); ++j) {
    const Sink& s = sinks_[j];
    if (s.user_output) {
      results.push_back(result_for(static_cast<int>(j), outs[j], user_inputs));
      const CallResult& r = results.back();
      if (r.fresh.defined() && !r.context_owned && !engine_->device().is_cpu())
        handed_out_.push_back(memory_span(r.fresh));
      continue;
    }
    // A signature mutation: the engine wrote it in place, or (copy-back) it is copied here.
    const Tensor& dst =
        s.user_input >= 0 ? user_inputs[s.user_input] : state_tensor(s.state_target);
    if (!outs[j].same_view(dst)) copy_into(dst, outs[j]);
  }
  return results;
}

void CompiledGraph::rebind_state(const std::string& target, const Tensor& t) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  auto it = state_.find(target);
  IP_CHECK(it != state_.end(), kNotFound, "[rebind] no state '", target, "' in this program");
  for (size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].user_input < 0 && sources_[i].state_target == target)
      session_->bind_state(engine_->inputs()[i].name, t);
  it->second = t;
}

std::vector<std::string> CompiledGraph::set_backend_options(const BackendOptions& options) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  return session_->set_backend_options(options);
}

int CompiledGraph::threads() const {
  std::lock_guard<std::mutex> lock(call_mutex_);
  return session_->threads();
}

std::map<std::string, int64_t> CompiledGraph::stats() const {
  std::lock_guard<std::mutex> lock(call_mutex_);
  return stats_map(session_->stats(kMethod));
}

void CompiledGraph::reset() {
  std::lock_guard<std::mutex> lock(call_mutex_);
  session_->reset();
}

std::vector<std::string> CompiledGraph::partly_updated() const {
  std::lock_guard<std::mutex> lock(call_mutex_);
  std::vector<std::string> out;
  for (int i : session_->context(kMethod).partly_updated())
    out.push_back(sources_[i].user_input >= 0 ? user_names_[sources_[i].user_input]
                                              : sources_[i].state_target);
  return out;
}

std::vector<int> CompiledGraph::written_user_inputs() const {
  std::set<int> out;
  for (int i : engine_->mutated_inputs())
    if (sources_[i].user_input >= 0) out.insert(sources_[i].user_input);
  for (const Sink& s : sinks_)
    if (s.user_input >= 0) out.insert(s.user_input);
  return {out.begin(), out.end()};
}

std::vector<std::string> CompiledGraph::prepared_state() const {
  std::set<std::string> out;
  for (const PreparedInput& p : engine_->plan().prepared)
    if (sources_[p.source].user_input < 0) out.insert(sources_[p.source].state_target);
  return {out.begin(), out.end()};
}

void CompiledGraph::state_written(const std::string& target) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  IP_CHECK(state_.count(target), kNotFound, "[state_written] no state '", target,
           "' in this program");
  for (size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].user_input < 0 && sources_[i].state_target == target)
      session_->state_written(engine_->inputs()[i].name);
}

std::vector<std::string> CompiledGraph::written_state() const {
  std::set<std::string> out;
  for (int i : engine_->mutated_inputs())
    if (sources_[i].user_input < 0) out.insert(sources_[i].state_target);
  for (const Sink& s : sinks_)
    if (!s.user_output && s.user_input < 0) out.insert(s.state_target);
  return {out.begin(), out.end()};
}

int CompiledGraph::num_user_outputs() const {
  int n = 0;
  for (const Sink& s : sinks_) n += s.user_output ? 1 : 0;
  return n;
}

std::vector<int> CompiledGraph::user_outputs() const {
  std::vector<int> out;
  for (size_t j = 0; j < sinks_.size(); ++j)
    if (sinks_[j].user_output) out.push_back(static_cast<int>(j));
  return out;
}

std::vector<CompiledGraph::AliasEntry> CompiledGraph::aliased_io() const {
  std::vector<AliasEntry> out;
  for (const Mutation& m : engine_->aliased_io()) {
    AliasEntry e;
    e.output = m.output;
    e.user_input = sources_[m.input].user_input;
    e.state_target = sources_[m.input].state_target;
    e.kind = mutation_kind_name(m.kind);
    out.push_back(e);
  }
  return out;
}

std::string CompiledGraph::graph_text() const {
  return graph_ ? graph_->to_string() : engine_->describe();
}

std::string CompiledGraph::lowered_text() const {
  return compiled_.program.graph ? compiled_.program.graph->to_string() : engine_->describe();
}

std::map<std::string, std::string> CompiledGraph::state_bindings() const {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].user_input < 0) out[engine_->inputs()[i].name] = sources_[i].state_target;
  return out;
}

}  // namespace inplace::python
