#include "ops/registry.h"

#include <algorithm>

#include "core/error.h"

namespace inplace {

// ops/fused_pointwise_ops.cpp (declared here: the family is written by a pass, not by users).
void register_fused_pointwise_ops(Registry& r);

namespace {
const std::vector<const OpDef*> kNoOverloads;
}

const Registry& Registry::get() {
  static const Registry* registry = [] {
    auto* r = new Registry();
    register_elementwise_ops(*r);
    register_reduction_ops(*r);
    register_matrix_ops(*r);
    register_creation_ops(*r);
    register_view_ops(*r);
    register_indexing_ops(*r);
    register_nn_ops(*r);
    register_misc_ops(*r);
    register_kv_cache_ops(*r);
    register_scan_ops(*r);
    register_sort_ops(*r);
    register_matrix_batch_ops(*r);
    register_einsum_ops(*r);
    register_fused_linear_ops(*r);
    register_gated_mlp_ops(*r);
    register_pointwise_extra_ops(*r);
    register_unsafe_split_ops(*r);
    register_export_assert_ops(*r);
    register_conv_ops(*r);
    register_rotary_ops(*r);
    register_sample_row_ops(*r);
    register_rotary_table_ops(*r);
    register_fused_pointwise_ops(*r);
    register_renamed_ops(*r);
    return r;
  }();
  return *registry;
}

void Registry::add(OpDef def) {
  std::string full = def.schema.full_name();
  IP_ASSERT(!defs_.count(full), "op '" + full + "' is registered once");
  // An op computes through a backend's kernel (infer: planned results; else an eager kernel),
  // through its twin (in place), or is a view / metadata function of its own (eager).
  IP_ASSERT(def.out == nullptr || def.infer != nullptr, "op '" + full + "' has infer with out");
  if (def.kind == OpKind::kFunctional && !def.schema.mutated_args().empty())
    def.kind = OpKind::kMutating;
  auto owned = std::make_unique<OpDef>(std::move(def));
  by_name_[owned->schema.name].push_back(owned.get());
  defs_[full] = std::move(owned);
}

Value pack_results(const Schema& schema, std::vector<Tensor> results) {
  if (schema.returns.size() == 1 && schema.returns[0].type == "Tensor[]") {
    std::vector<Value> items;
    for (auto& t : results) items.push_back(Value::from_tensor(std::move(t)));
    return Value::list(std::move(items));
  }
  if (results.size() == 1 && schema.returns.size() == 1) return Value::from_tensor(results[0]);
  std::vector<Value> items;
  for (auto& t : results) items.push_back(Value::from_tensor(std::move(t)));
  return Value::tuple(std::move(items));
}

void Registry::add_out(const std::string& text, InferFn infer, OutFn out) {
  OpDef def;
  def.schema = Schema::parse(text);
  def.infer = std::move(infer);
  def.out = std::move(out);  // TODO(issue 28 step 1): null once every family's kernels moved
  add(std::move(def));
}

void Registry::add_eager(const std::string& text, EagerFn eager) {
  OpDef def;
  def.schema = Schema::parse(text);
  def.eager = std::move(eager);
  add(std::move(def));
}

void Registry::add_view(const std::string& text, EagerFn view) {
  OpDef def;
  def.schema = Schema::parse(text);
  def.kind = OpKind::kView;
  def.eager = std::move(view);
  add(std::move(def));
}

void Registry::add_inplace(const std::string& text, const std::string& functional) {
  OpDef def;
  def.schema = Schema::parse(text);
  def.kind = OpKind::kMutating;
  def.functional = functional;
  auto muts = def.schema.mutated_args();
  IP_ASSERT(!muts.empty(), "in-place op '" + def.schema.full_name() + "' marks an argument (a!)");
  add(std::move(def));
}

void Registry::tag(std::initializer_list<const char*> names, uint32_t tags) {
  for (const char* name : names) {
    bool found = false;
    for (auto& [full, def] : defs_)
      if (def->schema.name == name) {
        def->tags |= tags;
        found = true;
      }
    IP_ASSERT(found, std::string("op '") + name + "' is registered before it is tagged");
  }
}

void Registry::add_alias(const std::string& spelling, const std::string& canonical) {
  aliases_[spelling] = canonical;
}

const OpDef* Registry::find(const std::string& full_name) const {
  auto it = defs_.find(full_name);
  if (it != defs_.end()) return it->second.get();
  // "name.default" is the default overload.
  size_t dot = full_name.find('.');
  if (dot != std::string::npos && full_name.substr(dot + 1) == "default") {
    it = defs_.find(full_name.substr(0, dot));
    if (it != defs_.end()) return it->second.get();
  }
  return nullptr;
}

const std::vector<const OpDef*>& Registry::overloads(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? kNoOverloads : it->second;
}

std::vector<const OpDef*> Registry::all() const {
  std::vector<const OpDef*> out;
  for (auto& [k, v] : defs_) out.push_back(v.get());
  return out;
}

std::string Registry::canonical_name(const std::string& target, std::string* overload) const {
  // A full spelling may be an alias of its own: torch.nn.functional.embedding takes
  // (input, weight) where aten.embedding takes (weight, indices).
  auto full = aliases_.find(target);
  if (full != aliases_.end() && by_name_.count(full->second)) {
    if (overload) overload->clear();
    return full->second;
  }
  std::string t = target;
  std::string ov;
  auto strip = [&](const char* prefix) {
    size_t n = std::char_traits<char>::length(prefix);
    if (t.compare(0, n, prefix) == 0) {
      t = t.substr(n);
      return true;
    }
    return false;
  };
  strip("torch.ops.");
  if (strip("aten.") || strip("inplace.")) {
    size_t dot = t.find('.');
    if (dot != std::string::npos) {
      ov = t.substr(dot + 1);
      t = t.substr(0, dot);
    }
    if (ov == "default") ov.clear();
  } else {
    strip("torch.nn.functional.") || strip("torch.Tensor.") || strip("torch.") ||
        strip("_operator.") || strip("operator.") || strip("builtins.");
  }
  auto al = aliases_.find(t);
  if (al != aliases_.end()) t = al->second;
  if (overload) *overload = ov;
  return by_name_.count(t) ? t : "";
}

// ---------------------------------------------------------------- binding

namespace {

bool type_matches(const ArgSpec& spec, const Value& v) {
  using K = Value::Kind;
  if (v.is_none()) return spec.optional_type() || spec.base_type() == "Any";
  if (v.is_node()) return true;  // type unknown before running
  std::string t = spec.base_type();
  if (t == "Any" || t == "Device" || t == "Layout" || t == "MemoryFormat") return true;
  if (t == "Tensor") return v.is_tensor() || v.is_number();
  if (t == "Scalar") return v.is_number() || (v.is_tensor() && v.tensor.numel() == 1);
  if (t == "int" || t == "SymInt")
    return v.kind == K::kInt || v.kind == K::kBool ||
           (v.is_tensor() && v.tensor.numel() == 1 && !is_floating(v.tensor.dtype()));
  if (t == "float") return v.is_number() || (v.is_tensor() && v.tensor.numel() == 1);
  if (t == "bool") return v.kind == K::kBool || v.kind == K::kInt;
  if (t == "str") return v.kind == K::kString;
  if (t == "ScalarType") return v.kind == K::kDType || v.kind == K::kString;
  if (t == "int[]" || t == "SymInt[]") {
    if (v.kind == K::kInt) return true;
    if (!v.is_sequence()) return false;
    for (const Value& x : v.items)
      if (!(x.kind == K::kInt || x.is_node() || (x.is_tensor() && x.tensor.numel() == 1)))
        return false;
    return true;
  }
  if (t == "float[]") return v.is_sequence();
  if (t == "Tensor[]" || t == "Tensor?[]") return v.is_sequence();
  return false;
}

}  // namespace

bool bind_args(const Schema& schema, const std::vector<Value>& args,
               const std::vector<std::pair<std::string, Value>>& kwargs, Args* out,
               std::string* why) {
  const size_t n = schema.args.size();
  out->assign(n, Value::none());
  std::vector<bool> filled(n, false);
  std::vector<size_t> positional;
  for (size_t i = 0; i < n; ++i)
    if (!schema.args[i].kwarg_only) positional.push_back(i);
  for (size_t i = 0; i < args.size(); ++i) {
    if (i >= positional.size()) {
      *why = str_cat("takes ", positional.size(), " positional arguments but ", args.size(),
                     " were given");
      return false;
    }
    size_t p = positional[i];
    const ArgSpec& spec = schema.args[p];
    // x.view(2, 3), x.permute(1, 0): trailing ints gather into the last list parameter;
    // torch.einsum("ij,jk", a, b): so do trailing tensors into a last Tensor[] parameter.
    const bool int_list = spec.base_type() == "int[]" || spec.base_type() == "SymInt[]";
    const bool tensor_list = spec.base_type() == "Tensor[]";
    if (p == positional.back() && i + 1 < args.size() && (int_list || tensor_list)) {
      bool all_fit = true;
      for (size_t k = i; k < args.size(); ++k)
        all_fit &= (int_list ? args[k].kind == Value::Kind::kInt : args[k].is_tensor()) ||
                   args[k].is_node();
      if (all_fit) {
        (*out)[p] =
            Value::list(std::vector<Value>(args.begin() + static_cast<long>(i), args.end()));
        filled[p] = true;
        break;
      }
    }
    // torch.einsum("ii", a): one trailing tensor is a one-element list. (A node stays as it is:
    // it may stand for a list; its runtime tensor is wrapped here when the call runs.)
    if (p == positional.back() && i + 1 == args.size() && tensor_list && args[i].is_tensor()) {
      (*out)[p] = Value::list({args[i]});
      filled[p] = true;
      break;
    }
    (*out)[p] = args[i];
    filled[p] = true;
  }
  for (const auto& [key, v] : kwargs) {
    int idx = schema.index_of(key);
    if (idx < 0) {
      *why = str_cat("got an unexpected keyword argument '", key, "'");
      return false;
    }
    if (filled[idx]) {
      *why = str_cat("got multiple values for argument '", key, "'");
      return false;
    }
    (*out)[idx] = v;
    filled[idx] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    const ArgSpec& spec = schema.args[i];
    if (!filled[i]) {
      if (!spec.default_value) {
        *why = str_cat("missing required argument '", spec.name, "'");
        return false;
      }
      (*out)[i] = *spec.default_value;
    }
    if (!type_matches(spec, (*out)[i])) {
      *why = str_cat("argument '", spec.name, "' must be ", spec.type, ", not ",
                     (*out)[i].kind_name());
      return false;
    }
  }
  return true;
}

bool already_bound(const Schema& schema, const std::vector<Value>& args) {
  if (args.size() != schema.args.size()) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& spec = schema.args[i];
    if (spec.kwarg_only || !type_matches(spec, args[i])) return false;
  }
  // bind_args wraps a last tensor given for a Tensor[] parameter into a list.
  return args.empty() || !(schema.args.back().base_type() == "Tensor[]" && args.back().is_tensor());
}

ResolvedCall resolve_call(const std::string& target, const std::vector<Value>& args,
                          const std::vector<std::pair<std::string, Value>>& kwargs,
                          const std::string& node_name) {
  const Registry& reg = Registry::get();
  std::string overload;
  std::string name = reg.canonical_name(target, &overload);
  IP_CHECK(!name.empty(), kUnsupported, "[node ", node_name, "] unknown op '", target, "'");
  std::vector<const OpDef*> candidates;
  if (!overload.empty()) {
    if (const OpDef* d = reg.find(name + "." + overload)) candidates.push_back(d);
  }
  for (const OpDef* d : reg.overloads(name))
    if (std::find(candidates.begin(), candidates.end(), d) == candidates.end())
      candidates.push_back(d);
  std::string reasons;
  for (const OpDef* d : candidates) {
    ResolvedCall rc;
    std::string why;
    if (bind_args(d->schema, args, kwargs, &rc.args, &why)) {
      rc.op = d;
      return rc;
    }
    reasons += str_cat(reasons.empty() ? "" : "; ", d->schema.full_name(), ": ", why);
  }
  IP_FAIL(kInvalidArgument, "[node ", node_name, "] arguments do not fit op '", target, "' (",
          reasons, ")");
}

}  // namespace inplace
