// Op schemas in PyTorch's notation, alias annotations included:
//   add_(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
// "(a!)" marks an argument the op writes; "(a)" on a return that shares an argument's set
// marks a view of that argument.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/value.h"

namespace inplace {

struct ArgSpec {
  std::string name;
  std::string type;       // "Tensor", "Tensor?", "Scalar", "int[]", "int[1]?", "ScalarType?", ...
  std::string alias_set;  // "a" in Tensor(a!) ; empty if none
  bool writes = false;    // the "!"
  bool kwarg_only = false;
  std::optional<Value> default_value;

  bool optional_type() const { return !type.empty() && type.back() == '?'; }
  // The type without '?' and any list length: "int[1]?" -> "int[]".
  std::string base_type() const;
};

struct ReturnSpec {
  std::string type;
  std::string alias_set;
  bool writes = false;
};

struct Schema {
  std::string name;      // "add_"
  std::string overload;  // "Tensor" ; empty for the default overload
  std::vector<ArgSpec> args;
  std::vector<ReturnSpec> returns;

  // Throws kParse naming the text.
  static Schema parse(const std::string& text);
  std::string full_name() const { return overload.empty() ? name : name + "." + overload; }
  std::string to_string() const;

  int index_of(const std::string& arg_name) const;  // -1 if absent
  // Indices of the arguments this op writes.
  std::vector<int> mutated_args() const;
  // For return r: the argument it aliases (view or in-place result), or -1.
  int aliased_arg_of_return(size_t r) const;
  bool is_view() const;  // returns alias an argument that is not written
};

}  // namespace inplace
