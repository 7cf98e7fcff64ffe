// The engine of inplace_to_out_of_place. It walks the graph in order keeping, for every
// storage root (input, buffer, fresh result), the node that holds its current value and a
// version that goes up on each write. A mutation computes the new value of what it writes,
// scatters it back through the view chain into the root, and bumps the version. A read of a
// view whose root moved on replays the view on the root's current value, so every alias --
// taken before or after the write, or the result of an earlier in-place op -- sees it.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "passes/alias_model.h"
#include "passes/functional_forms.h"
#include "passes/pass.h"

namespace inplace {

class Functionalizer {
 public:
  Functionalizer(Graph& graph, const PassOptions& options);
  void run();

 private:
  struct RootState {
    Node* current = nullptr;
    int version = 0;
  };
  struct ValueState {
    Node* current = nullptr;
    int version = -1;
  };

  // ---- values (functionalizer.cpp) ----
  Node* current(Node* orig);
  Node* up_to_date(Node* orig);  // the current value when no replay is needed, else null
  static bool replays_on_root(const AliasInfo& a);  // as_strided at a known offset
  void rewrite_uses(Node* n);  // every reference in n's arguments -> its current value
  // `orig` (a tensor value of the input program) now holds `value`.
  void write(Node* orig, Node* value);
  Node* replay(Node* orig, Node* parent_now);
  // The current value of a root, as a tensor with storage of its own (for as_strided).
  Node* strided_base(Node* root_origin);
  void process(Node* n);
  void sync_roots();
  Value creation_value(const Node* user, const Value& v) const;
  Node* emit(const std::string& target, std::vector<Value> args,
             std::vector<std::pair<std::string, Value>> kwargs = {}, const std::string& hint = "");
  Node* emitted(Node* n);  // records the meta of a node the emitter made

  // ---- new values of mutated tensors (mutation_lowering.cpp) ----
  Node* lower(Node* n, const FunctionalForm& form, const ResolvedCall& rc, Node* target_now);
  Node* lower_twin(const FunctionalForm& form, const ResolvedCall& rc, Node* target_now);
  Node* lower_copy(const Value& src, Node* target_now);
  // A fresh tensor like `target_now` holding `value` (already of its shape).
  Node* whole_update(Node* target_now, Node* value);
  Node* lower_setitem(Node* n, const ResolvedCall& rc, Node* target_now);
  Node* lower_advanced(Node* n, Node* region, const std::vector<Value>& indices,
                       const Value& value);
  // `value` (a number or tensor) made into the value of `region`: full_like, cast, expand_as.
  Node* fit_value(const Value& value, Node* region);
  Node* cast_like(Node* v, Node* like);
  Node* drop_leading_ones(Node* v, int64_t region_dim);
  Node* cast_value(Node* v, std::optional<DType> have, Node* region);
  Node* cast_to(Node* v, DType dtype);
  std::vector<Node*> forward_chain(Node* base, const std::vector<ViewStep>& steps);
  // The new value of chain[0] once the view `steps` of it takes `value`; chain[i] is the
  // value step i starts from.
  Node* scatter_back(const std::vector<ViewStep>& steps, const std::vector<Node*>& chain,
                     Node* value, const Tensor* base_meta);
  const Tensor* meta(const Node* n) const { return metas_.tensor(n); }
  std::optional<DType> dtype_of_value(const Value& v) const;
  std::optional<Shape> shape_of_value(const Value& v) const;

  Graph& graph_;
  const PassOptions& options_;
  MetaTable metas_;
  AliasTracker tracker_;
  std::vector<RootState> roots_;
  std::map<const Node*, ValueState> values_;
  // For each processed node: its arguments' original references -> the values they had.
  std::map<const Node*, std::vector<std::pair<Node*, Node*>>> seen_;
  Node* cursor_ = nullptr;  // the node being processed; new nodes go before it
  std::unique_ptr<Emitter> em_;
  size_t inferred_ = 0;  // em_'s emitted nodes whose metas emitted() has worked out
  std::vector<Node*> erase_;
};

}  // namespace inplace
