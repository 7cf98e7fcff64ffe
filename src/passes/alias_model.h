// Which storage every value lives in. Each tensor value is a root (an input, a buffer, or a
// fresh result) or a view of one reached by a chain of view steps; a list of views (split) is
// a container. alias_analysis and inplace_to_out_of_place read the same model.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "passes/view_rules.h"

namespace inplace {

struct Root {
  enum class Kind : uint8_t { kInput, kBuffer, kIntermediate };
  Kind kind = Kind::kIntermediate;
  std::string name;        // placeholder name, buffer target, or the origin node's name
  Node* origin = nullptr;  // the node whose value is the whole root
};

struct AliasInfo {
  enum class Kind : uint8_t { kOther, kRoot, kView, kContainer };
  Kind kind = Kind::kOther;
  int root = -1;
  bool is_sequence = false;  // kOther: a list or tuple of fresh values (max.dim, ...)
  Node* parent = nullptr;    // view, container: the value it was taken from
  int parent_arg = 0;        // the argument of this node that holds `parent`
  Node* base = nullptr;      // view: the value `steps` start from (parent, or a split's input)
  std::vector<ViewStep> steps;
  std::string no_inverse;  // a write through this view can't be scattered back, and why
  bool absolute = false;   // as_strided: `base` is the root, steps address its storage
  ViewRule container;      // container: where its pieces sit in `parent`
};

class AliasTracker {
 public:
  explicit AliasTracker(const MetaTable& metas) : metas_(metas) {}

  // Records a node from its arguments as they are now; nodes must be recorded in order.
  void record(Node* node);
  const AliasInfo& info(const Node* n) const;
  int root_of(const Node* n) const { return info(n).root; }
  const Root& root(int i) const { return roots_[i]; }
  int num_roots() const { return static_cast<int>(roots_.size()); }
  // The value is all of its root, as laid out (the root itself or an identity alias).
  bool is_whole(const Node* n) const;
  // The op and bound arguments of a recorded call node.
  const ResolvedCall& call(const Node* n) const;

 private:
  int new_root(Root::Kind kind, std::string name, Node* origin);
  void record_call(Node* node);
  // The result of an in-place op on `target` (argument `parent_arg`): `target` as it is.
  AliasInfo alias_of(Node* target, int parent_arg) const;
  AliasInfo view_of(Node* parent, int parent_arg, Node* base, std::vector<ViewStep> steps,
                    std::string no_inverse) const;

  const MetaTable& metas_;
  std::vector<Root> roots_;
  std::map<const Node*, AliasInfo> info_;
  std::map<const Node*, ResolvedCall> calls_;
  std::map<std::string, Node*> buffers_;  // get_attr target -> its first get_attr node
  std::map<std::pair<const Node*, int64_t>, Node*> elements_;  // (fresh tuple, k) -> first getitem
};

}  // namespace inplace
