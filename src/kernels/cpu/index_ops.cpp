// The cpu kernels of aten.index / index_put, the one-dim index ops (index_select, index_copy,
// index_add, index_fill), the mask ops (nonzero, argwhere, masked_select, masked_scatter) and the
// embeddings, registered into the kernel table. Arguments and plans are read as the declarations
// read them (ops/index_ops_args.h); the in-place forms and the ops whose result shape depends on
// data are eager kernels that write self or return a fresh result.
#include <cstring>

#include "kernels/cpu/index_common.h"
#include "kernels/cpu/index_kernels.h"
#include "kernels/cpu/registration.h"
#include "ops/index_ops_args.h"

namespace inplace::cpu {

namespace {

using indexing::DimOp;
using indexing::tensor_arg;

constexpr DeviceType kCpu = DeviceType::kCpu;

Value index_put_into(const Tensor& target, const Args& a, const char* op) {
  Tensor values = tensor_arg(a[2], op, target.dtype());
  AdvancedIndex ai = indexing::plan_index(target, a[1], op);
  index_put(target, ai, values, a[3].as_bool(op), op);
  return Value::from_tensor(target);
}

// index_copy of whole slices by memcpy, without an index plan: a contiguous source into a
// contiguous target of its dtype along `dim`, a 1-D int64 index all in range, no overlap (a
// cache or ring buffer written at this step's positions). False for anything else, which the
// general path takes (and refuses where it must, with its words). Slices are written in index
// order, so a repeated index keeps its last slice, as the general path does.
bool copy_slices(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& source) {
  const int64_t rank = target.dim();
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || source.dim() != rank || source.dtype() != target.dtype() ||
      index.dtype() != DType::kInt64 || index.dim() != 1 || !index.device().is_cpu() ||
      !target.is_contiguous() || !source.is_contiguous() || !index.is_contiguous() ||
      source.may_overlap(target) || index.may_overlap(target))
    return false;
  const int64_t n = index.numel(), rows = target.size(dim);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(target.dtype()));
  for (int64_t d = 0; d < rank; ++d) {
    if (source.size(d) != (d == dim ? n : target.size(d))) return false;
    if (d < dim) outer *= target.size(d);
    if (d > dim) inner *= target.size(d);
  }
  const int64_t* at = index.data<int64_t>();
  for (int64_t j = 0; j < n; ++j)
    if (at[j] < 0 || at[j] >= rows) return false;
  char* t = static_cast<char*>(target.data_ptr());
  const char* s = static_cast<const char*>(source.data_ptr());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(t + (o * rows + at[j]) * inner, s + (o * n + j) * inner,
                  static_cast<size_t>(inner));
  return true;
}

// index_copy / index_add / index_fill into `target` (self or its copy).
void dim_put(const Tensor& target, const Args& a, DimOp kind, const char* op) {
  const int64_t dim = a[1].as_int(op);
  const Tensor index = tensor_arg(a[2], op);
  if (kind == DimOp::kCopy && a[3].is_tensor() && copy_slices(target, dim, index, a[3].tensor))
    return;
  AdvancedIndex ai = indexing::plan_dim(target, dim, index, op);
  ai.wrap_negative = kind == DimOp::kFill;  // PyTorch refuses a negative index_copy/index_add index
  const Tensor t1 = indexing::as_1d(target);
  if (kind == DimOp::kFill) {
    Tensor value = tensor_arg(a[3], op, target.dtype());
    IP_CHECK(value.dim() == 0, kInvalidArgument, "[", op,
             "] only supports a 0-dimensional value tensor, got shape ", shape_str(value.shape()));
    index_put(t1, ai, value, false, op);
    return;
  }
  const Tensor source = tensor_arg(a[3], op, target.dtype());
  indexing::check_source(target, ai, source, op);
  const Tensor src1 = source.dim() == 0 ? source.unsqueeze(0) : source;
  if (kind == DimOp::kCopy) {
    index_put(t1, ai, src1, false, op);
  } else {
    index_put(t1, ai, src1, true, op, a[4].as_scalar(op));
  }
}

void register_index(KernelTable& t) {
  for (const char* name : {"index.Tensor", "_unsafe_index.Tensor"}) {
    const std::string op = std::string(name).substr(0, std::string(name).find('.'));
    t.add(kCpu, name, [op](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      const Tensor& self = a[0].as_tensor(op.c_str());
      index_gather(self, indexing::plan_index(self, a[1], op.c_str()), out[0], op.c_str());
    });
  }
  for (const char* name : {"index_put", "_unsafe_index_put"}) {
    const std::string op = name;
    t.add(kCpu, name, [op](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      copy_region(out[0], a[0].as_tensor(op.c_str()));
      index_put_into(out[0], a, op.c_str());
    });
  }
  for (const char* name : {"index_put_", "_index_put_impl_"})
    t.add_eager(kCpu, name, [](const Args& a) {
      return index_put_into(a[0].as_tensor("index_put_"), a, "index_put_");
    });

  t.add(kCpu, "index_select",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const Tensor self = tensor_arg(a[0], "index_select");
          index_gather(indexing::as_1d(self), indexing::index_select_plan(a),
                       indexing::as_1d(out[0]), "index_select");
        });

  struct DimDecl {
    const char* functional;  // its overloads
    const char* name;        // in errors
    const char* inplace;
    DimOp kind;
  };
  for (const DimDecl& d : {DimDecl{"index_copy", "index_copy", "index_copy_", DimOp::kCopy},
                           DimDecl{"index_add", "index_add", "index_add_", DimOp::kAdd},
                           DimDecl{"index_fill", "index_fill", "index_fill_", DimOp::kFill}}) {
    const DimDecl decl = d;
    t.add(kCpu, d.functional,
          [decl](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
            copy_region(out[0], tensor_arg(a[0], decl.name));
            dim_put(out[0], a, decl.kind, decl.name);
          });
    t.add_eager(kCpu, d.inplace, [decl](const Args& a) {
      dim_put(a[0].as_tensor(decl.inplace), a, decl.kind, decl.inplace);
      return a[0];
    });
  }
}

void register_masks(KernelTable& t) {
  t.add_eager(kCpu, "nonzero", [](const Args& a) {
    return Value::from_tensor(nonzero(tensor_arg(a[0], "nonzero")));
  });
  t.add_eager(kCpu, "argwhere", [](const Args& a) {
    return Value::from_tensor(nonzero(tensor_arg(a[0], "argwhere")));
  });
  t.add_eager(kCpu, "masked_select", [](const Args& a) {
    return Value::from_tensor(masked_select(tensor_arg(a[0], "masked_select"),
                                            tensor_arg(a[1], "masked_select"), "masked_select"));
  });
  t.add(kCpu, "masked_scatter",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          copy_region(out[0], tensor_arg(a[0], "masked_scatter"));
          masked_scatter(out[0], tensor_arg(a[1], "masked_scatter"),
                         tensor_arg(a[2], "masked_scatter"), "masked_scatter");
        });
  t.add_eager(kCpu, "masked_scatter_", [](const Args& a) {
    masked_scatter(a[0].as_tensor("masked_scatter_"), tensor_arg(a[1], "masked_scatter_"),
                   tensor_arg(a[2], "masked_scatter_"), "masked_scatter_");
    return a[0];
  });
}

void register_embeddings(KernelTable& t) {
  t.add(kCpu, "embedding", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    index_gather(a[indexing::kEmbedding.weight].as_tensor("embedding"), indexing::embedding_plan(a),
                 out[0], "embedding");
  });
  t.add(kCpu, "embedding_functional",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const AdvancedIndex ai = indexing::embedding_functional_plan(a);
          index_gather(a[indexing::kEmbeddingFunctional.weight].as_tensor("embedding"), ai, out[0],
                       "embedding");
        });
  t.add(kCpu, "fused_embedding",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const Tensor& table = a[indexing::kEmbeddingFunctional.weight].tensor;
          const Tensor rows = Tensor::empty(out[0].shape(), table.dtype());
          index_gather(table, indexing::fused_embedding_plan(a), rows, "fused_embedding");
          out[0].copy_from(rows);
        });
}

}  // namespace

void register_index_kernels(KernelTable& table) {
  register_index(table);
  register_masks(table);
  register_embeddings(table);
}

}  // namespace inplace::cpu
