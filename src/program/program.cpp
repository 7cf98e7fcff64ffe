#include "program/program.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.h"
#include "program/session.h"

namespace inplace {

namespace {

std::string quoted(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? "(none)" : s;
}

}  // namespace

std::string Method::call_input_names() const {
  std::vector<std::string> names;
  for (int i : call_inputs) names.push_back(engine->inputs()[i].name);
  return quoted(names);
}

std::shared_ptr<const Program> Program::assemble(std::string name,
                                                 std::vector<std::shared_ptr<const Engine>> engines,
                                                 std::vector<std::string> method_names,
                                                 StateTable state,
                                                 std::map<std::string, std::string> metadata) {
  IP_ASSERT(engines.size() == method_names.size(), "one name per method engine");
  IP_CHECK(!engines.empty(), kInvalidArgument, "[program] '", name, "' has no methods");
  for (const auto& [key, value] : metadata)
    IP_CHECK(!key.empty() && key.find_first_of("=\n") == std::string::npos &&
                 value.find('\n') == std::string::npos,
             kInvalidArgument, "[program] metadata key '", key,
             "': keys are non-empty without '=' or a newline, values without a newline");
  std::shared_ptr<Program> p(new Program());
  p->name_ = std::move(name);
  p->state_ = std::move(state);
  p->metadata_ = std::move(metadata);
  std::set<std::string> names;
  std::vector<bool> used(p->state_.size(), false);
  for (size_t m = 0; m < engines.size(); ++m) {
    const std::string& mname = method_names[m];
    IP_CHECK(!mname.empty() && mname.find_first_of(".=%@") == std::string::npos, kInvalidArgument,
             "[program] method name '", mname, "' must be non-empty without '.', '=', '%' or '@'");
    IP_CHECK(names.insert(mname).second, kInvalidArgument, "[program] method '", mname,
             "' is defined twice");
    Method method;
    method.name = mname;
    method.engine = std::move(engines[m]);
    const Engine& e = *method.engine;
    IP_CHECK(p->methods_.empty() || e.device() == p->device(), kInvalidArgument, "[program] '",
             p->name_, "': method '", mname, "' runs on '", e.device().str(), "' but method '",
             p->methods_.front().name, "' on '", p->device().str(),
             "'; a program runs every method on one device");
    for (size_t i = 0; i < e.inputs().size(); ++i) {
      const Binding& b = e.inputs()[i];
      int s = p->state_.find(b.name);
      method.state_of_input.push_back(s);
      if (s < 0) {
        method.call_inputs.push_back(static_cast<int>(i));
        continue;
      }
      const StateEntry& entry = p->state_[s];
      used[s] = true;
      IP_CHECK(b.shape == entry.shape && b.dtype == entry.dtype, kShapeMismatch,
               "[program] method '", mname, "' binds state '", b.name, "' as ", shape_str(b.shape),
               " ", dtype_name(b.dtype), " but the state table has ", shape_str(entry.shape), " ",
               dtype_name(entry.dtype));
      IP_CHECK(b.dynamic_dims.empty(), kInvalidArgument, "[program] method '", mname, "': state '",
               b.name, "' has a dynamic dim ", b.dynamic_dims[0], " (up to ",
               b.shape[b.dynamic_dims[0]],
               " per call); state must have a fixed size, allocated once per session");
      if (entry.ownership == Ownership::kCaller) method.call_inputs.push_back(static_cast<int>(i));
    }
    for (int i : e.mutated_inputs())
      IP_CHECK(method.state_of_input[i] >= 0, kInvalidArgument, "[program] method '", mname,
               "' writes input '", e.inputs()[i].name,
               "', which is not in the state table; the state is ", p->state_.names());
    p->methods_.push_back(std::move(method));
  }
  for (size_t s = 0; s < used.size(); ++s)
    IP_CHECK(used[s], kInvalidArgument, "[program] state '", p->state_[s].name,
             "' is used by no method");
  // Each distinct weight once: methods built from one set of weights share the tensors.
  for (const Method& m : p->methods_) {
    const Plan& plan = m.engine->plan();
    for (size_t k = 0; k < plan.constants.size(); ++k) {
      bool known = std::any_of(p->weights_.begin(), p->weights_.end(), [&](const Weight& w) {
        return w.tensor.same_view(plan.constants[k]);
      });
      if (!known) p->weights_.push_back({plan.constant_names[k], plan.constants[k]});
    }
  }
  return p;
}

int Program::method_index(const std::string& method) const {
  std::vector<std::string> names;
  for (size_t m = 0; m < methods_.size(); ++m) {
    if (methods_[m].name == method) return static_cast<int>(m);
    names.push_back(methods_[m].name);
  }
  IP_FAIL(kNotFound, "[program] '", name_, "' has no method '", method, "'; its methods are ",
          quoted(names));
}

int64_t Program::weight_bytes() const {
  int64_t n = 0;
  for (const Weight& w : weights_) n += static_cast<int64_t>(w.tensor.nbytes());
  return n;
}

std::string Program::describe() const {
  std::ostringstream os;
  os << "program " << name_ << " on " << device().str() << ": " << methods_.size() << " methods, "
     << state_.size() << " state entries, " << weights_.size() << " weights (" << weight_bytes()
     << " bytes, shared by every method)\n";
  for (const Method& m : methods_) {
    const Engine& e = *m.engine;
    os << "method " << m.name << ": " << e.plan().steps.size() << " steps, arena "
       << e.plan().arena_bytes << " bytes\n  inputs:\n";
    for (size_t i = 0; i < e.inputs().size(); ++i) {
      const Binding& b = e.inputs()[i];
      os << "    " << i << ": " << b.name << " " << shape_str(b.shape) << " "
         << dtype_name(b.dtype);
      for (int64_t d : b.dynamic_dims)
        os << " (dim " << d << " dynamic, at most " << b.shape[d] << ")";
      int s = m.state_of_input[i];
      if (s >= 0)
        os << "  state, " << ownership_name(state_[s].ownership) << "-owned"
           << (std::count(e.mutated_inputs().begin(), e.mutated_inputs().end(), static_cast<int>(i))
                   ? ", written"
                   : ", read");
      os << "\n";
    }
    os << "  outputs: " << e.original_output_count() << "\n  aliased_io:";
    if (e.aliased_io().empty()) os << " (none)";
    os << "\n";
    for (const Mutation& a : e.aliased_io())
      os << "    output " << a.output << " -> input " << a.input << " '" << e.inputs()[a.input].name
         << "' (" << mutation_kind_name(a.kind) << ")\n";
  }
  os << "state:\n";
  if (state_.size() == 0) os << "  (none)\n";
  for (const StateEntry& s : state_.entries())
    os << "  " << s.name << " " << shape_str(s.shape) << " " << dtype_name(s.dtype) << " "
       << ownership_name(s.ownership) << "-owned, initial value "
       << (s.initial.defined() ? "stored" : "none (the caller's)") << "\n";
  return os.str();
}

std::unique_ptr<Session> Program::new_session() const {
  return std::make_unique<Session>(shared_from_this());
}

}  // namespace inplace
