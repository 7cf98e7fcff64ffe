#include "ops/indexing_ops.h"

#include "ops/index_spec.h"

namespace inplace {

namespace indexing {

Tensor tensor_arg(const Value& v, const char* op, std::optional<DType> number_dtype) {
  if (v.is_number()) {
    Scalar s = v.as_scalar(op);
    return Tensor::scalar(s, number_dtype.value_or(s.default_dtype()));
  }
  return v.as_tensor(op);
}

std::vector<Tensor> index_list(const Value& v, const char* op) {
  IP_CHECK(v.is_sequence(), kInvalidArgument, "[", op, "] indices must be a list, got ",
           v.kind_name());
  std::vector<Tensor> out;
  for (const Value& x : v.items) {
    if (x.is_none()) {
      out.emplace_back();
    } else if (x.is_tensor()) {
      out.push_back(x.tensor);
    } else if (x.kind == Value::Kind::kInt) {
      out.push_back(Tensor::scalar(Scalar(x.i), DType::kInt64));
    } else if (x.is_sequence()) {
      std::vector<int64_t> ints = x.as_int_list(op);
      out.push_back(Tensor::from_vector<int64_t>(ints, {static_cast<int64_t>(ints.size())}));
    } else {
      IP_FAIL(kInvalidArgument, "[", op, "] an index must be a Tensor or None, got ",
              x.kind_name());
    }
  }
  return out;
}

void add_mutating(Registry& r, const std::string& schema, const std::string& functional,
                  EagerFn eager) {
  OpDef def;
  def.schema = Schema::parse(schema);
  def.kind = OpKind::kMutating;
  def.functional = functional;
  def.eager = std::move(eager);
  r.add(std::move(def));
}

void add_dynamic(Registry& r, const std::string& schema, EagerFn eager) {
  OpDef def;
  def.schema = Schema::parse(schema);
  def.eager = std::move(eager);
  def.dynamic_shape = true;
  r.add(std::move(def));
}

}  // namespace indexing

void register_indexing_ops(Registry& r) {
  indexing::register_getitem_ops(r);
  indexing::register_index_ops(r);
  indexing::register_mask_ops(r);
  indexing::register_scatter_ops(r);
  indexing::register_view_scatter_ops(r);
}

}  // namespace inplace
