#include "program/state_table.h"

#include <set>

#include "core/error.h"

namespace inplace {

const char* ownership_name(Ownership o) {
  return o == Ownership::kCaller ? "caller" : "runtime";
}

StateTable::StateTable(std::vector<StateEntry> entries) : entries_(std::move(entries)) {
  std::set<std::string> seen;
  for (const StateEntry& e : entries_) {
    IP_CHECK(!e.name.empty(), kInvalidArgument, "[program] a state entry has an empty name");
    IP_CHECK(seen.insert(e.name).second, kInvalidArgument, "[program] state '", e.name,
             "' is listed twice");
    int64_t numel = 1;
    for (int64_t d : e.shape) {
      IP_CHECK(d >= 0 && (d == 0 || numel <= kMaxStateBytes / d), kInvalidArgument,
               "[program] state '", e.name, "' has shape ", shape_str(e.shape),
               ", over the limit of ", kMaxStateBytes, " bytes per state entry");
      numel *= d;
    }
    const int64_t bytes = numel * static_cast<int64_t>(dtype_size(e.dtype));
    IP_CHECK(bytes <= kMaxStateBytes, kInvalidArgument, "[program] state '", e.name, "' ",
             shape_str(e.shape), " ", dtype_name(e.dtype), " needs ", bytes,
             " bytes, over the limit of ", kMaxStateBytes, " bytes per state entry");
    IP_CHECK(e.ownership == Ownership::kCaller || e.initial.defined(), kInvalidArgument,
             "[program] runtime-owned state '", e.name,
             "' has no initial value (a session could not start it)");
    if (e.initial.defined())
      IP_CHECK(!e.initial.is_meta() && e.initial.shape() == e.shape && e.initial.dtype() == e.dtype,
               kShapeMismatch, "[program] state '", e.name, "' is ", shape_str(e.shape), " ",
               dtype_name(e.dtype), " but its initial value is ", shape_str(e.initial.shape()), " ",
               dtype_name(e.initial.dtype()), e.initial.is_meta() ? " with no data" : "");
  }
}

int StateTable::find(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == name) return static_cast<int>(i);
  return -1;
}

int StateTable::index(const std::string& name, const std::string& where) const {
  int i = find(name);
  IP_CHECK(i >= 0, kNotFound, "[", where, "] no state named '", name, "'; the state is ", names());
  return i;
}

std::string StateTable::names() const {
  std::string s;
  for (const StateEntry& e : entries_) s += (s.empty() ? "'" : ", '") + e.name + "'";
  return s.empty() ? "(none)" : s;
}

}  // namespace inplace
