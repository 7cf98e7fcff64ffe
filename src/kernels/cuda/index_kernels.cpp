// CUDA kernels of the indexed reads (index_select, embedding, gather) and writes (index_copy,
// kv_cache_update, slice_scatter, select_scatter). Positions held in tensors are read by the
// kernels from device memory. A scatter-like op first copies self into its result, skipped
// when the engine placed the result on self (the same view).
#include "kernels/cuda/call_data.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "ops/index_ops_args.h"
#include "ops/kv_cache_args.h"
#include "ops/scatter_args.h"
#include "ops/view_scatter_args.h"

namespace inplace::cuda {

namespace {

// `t` seen at `shape` with its own strides where dims line up (right-aligned), stride 0 along
// `zero_dim` (the indexed dim) and where `t` has no such dim.
Operand strided_at(const Tensor& t, const Shape& shape, int64_t zero_dim) {
  IP_CHECK(static_cast<int64_t>(shape.size()) <= kMaxDims, kUnsupported, "[cuda] ", shape.size(),
           "-d operands are not supported (at most ", kMaxDims, " dims)");
  Operand o;
  o.data = static_cast<char*>(t.data_ptr());
  o.dtype = t.dtype();
  o.ndim = static_cast<int>(shape.size());
  const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
  for (int64_t d = 0; d < o.ndim; ++d) {
    o.size[d] = shape[d];
    o.stride[d] = (d == zero_dim || d - lead < 0) ? 0 : t.stride(d - lead);
  }
  return o;
}

// A 1-D (or 0-d) index along `dim` of `shape`.
Operand index_along(const Tensor& index, const Shape& shape, int64_t dim) {
  Operand o = strided_at(index, shape, -1);
  for (int64_t d = 0; d < o.ndim; ++d) o.stride[d] = 0;
  if (index.dim() == 1) o.stride[dim] = index.stride(0);
  return o;
}

// A position outside the indexed dim raises the context's device error flag, naming the step.
IndexMap with_errors(IndexMap m, const KernelContext& ctx) {
  m.error = error_flag(ctx);
  m.error_step = ctx.step;
  return m;
}

// out = self, unless the engine placed out on self already.
void copy_self(const Tensor& self, const Tensor& out, void* stream) {
  if (!self.same_view(out)) copy_cast(operand(out), operand(self, out.shape()), stream);
}

// index_select as an index read; false for a 0-d self (a copy).
bool index_select_map(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx,
                      IndexMap* m) {
  const Tensor& self = a[0].tensor;
  const Tensor& out = outs[0];
  const int64_t dim =
      wrap_dim(a[1].as_int("index_select"), std::max<int64_t>(self.dim(), 1), "index_select");
  if (self.dim() == 0) return false;
  m->values = operand(out);
  m->strided = strided_at(self, out.shape(), dim);
  m->index = index_along(a[2].tensor, out.shape(), dim);
  m->unit = self.stride(dim);
  m->extent = self.size(dim);
  *m = with_errors(*m, ctx);
  return true;
}

void index_select_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  IndexMap m;
  if (index_select_map(a, outs, ctx, &m))
    index_read(m, ctx.queue);
  else
    copy_cast(operand(outs[0]), operand(a[0].tensor, outs[0].shape()), ctx.queue);
}

// Two index_select steps in one launch (a rotary table's cos and sin rows at the positions).
void index_select_pair(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                       const Args& a2, const std::vector<Tensor>& o2, const KernelContext& c2) {
  IndexMap m1, m2;
  if (index_select_map(a1, o1, c1, &m1) && index_select_map(a2, o2, c2, &m2))
    return index_read_pair(m1, m2, c1.queue);
  index_select_kernel(a1, o1, c1);
  index_select_kernel(a2, o2, c2);
}

void gather_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& self = a[0].tensor;
  const Tensor& out = outs[0];
  if (self.dim() == 0) return copy_cast(operand(out), operand(self, out.shape()), ctx.queue);
  const int64_t dim = gather_dim(self, a);
  IndexMap m;
  m.values = operand(out);
  m.strided = strided_at(self, out.shape(), dim);
  m.index = operand(a[2].tensor, out.shape());
  m.unit = self.stride(dim);
  m.extent = self.size(dim);
  index_read(with_errors(m, ctx), ctx.queue);
}

// embedding(weight [V, D], indices [...]) -> [..., D] as an index read.
IndexMap embedding_map(const Tensor& weight, const Tensor& indices, const Tensor& out,
                       const KernelContext& ctx) {
  IndexMap m;
  m.values = operand(out);
  m.strided = strided_at(weight, out.shape(), -1);
  for (int d = 0; d + 1 < m.strided.ndim; ++d) m.strided.stride[d] = 0;
  m.index = operand(indices.unsqueeze(indices.dim()), out.shape());
  m.unit = weight.stride(0);
  m.extent = weight.size(0);
  return with_errors(m, ctx);
}

void embedding_kernel(const Tensor& weight, const Tensor& indices, const Tensor& out,
                      const KernelContext& ctx) {
  index_read(embedding_map(weight, indices, out, ctx), ctx.queue);
}

// Two embedding steps in one launch (GPT-2's token and position embeddings).
void embedding_pair(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                    const Args& a2, const std::vector<Tensor>& o2, const KernelContext& c2) {
  constexpr indexing::EmbeddingOperands e = indexing::kEmbedding;
  index_read_pair(embedding_map(a1[e.weight].tensor, a1[e.indices].tensor, o1[0], c1),
                  embedding_map(a2[e.weight].tensor, a2[e.indices].tensor, o2[0], c2), c1.queue);
}

void index_copy_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& self = a[0].tensor;
  const Tensor& out = outs[0];
  const Tensor& source = a[3].tensor;
  copy_self(self, out, ctx.queue);
  if (out.dim() == 0) return copy_cast(operand(out), operand(source, out.shape()), ctx.queue);
  const int64_t dim = wrap_dim(a[1].as_int("index_copy"), out.dim(), "index_copy");
  const Tensor src = source.dim() == out.dim() ? source : source.unsqueeze(dim);
  IndexMap m;
  m.values = operand(src);
  m.strided = strided_at(out, src.shape(), dim);
  m.index = index_along(a[2].tensor, src.shape(), dim);
  m.unit = out.stride(dim);
  m.extent = out.size(dim);
  index_write(with_errors(m, ctx), ctx.queue);
}

}  // namespace

IndexMap kv_cache_map(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  using namespace kv_cache;
  const Tensor& update = a[kUpdate].tensor;
  const Tensor& out = outs[0];
  IndexMap m;
  m.values = operand(update);
  m.strided = strided_at(out, update.shape(), 2);
  m.unit = out.stride(2);
  m.extent = out.size(2);
  const Shape& shape = update.shape();
  if (!a[kStart].is_none()) {
    m.coord_dim = 2;
    if (a[kStart].is_tensor()) {
      const Tensor& start = a[kStart].tensor;
      m.index = strided_at(start, shape, -1);
      for (int d = 0; d < 4; ++d) m.index.stride[d] = 0;
      if (start.numel() > 1) m.index.stride[0] = start.stride(start.dim() - 1);
    } else {
      m.index = number(a[kStart].as_scalar("kv_cache_update"));
    }
  } else {
    const Tensor& index = a[kIndex].tensor;
    m.index = strided_at(index, shape, -1);
    for (int d = 0; d < 4; ++d) m.index.stride[d] = 0;
    m.index.stride[2] = index.stride(index.dim() - 1);
    if (index.dim() == 2) m.index.stride[0] = index.stride(0);
  }
  return with_errors(m, ctx);
}

namespace {

void kv_cache_update_kernel(const Args& a, const std::vector<Tensor>& outs,
                            const KernelContext& ctx) {
  copy_self(a[kv_cache::kCache].tensor, outs[0], ctx.queue);
  index_write(kv_cache_map(a, outs, ctx), ctx.queue);
}

// A layer's k and v cache writes in one launch (the engine pairs the two steps).
void kv_cache_update_pair(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                          const Args& a2, const std::vector<Tensor>& o2, const KernelContext& c2) {
  copy_self(a1[kv_cache::kCache].tensor, o1[0], c1.queue);
  copy_self(a2[kv_cache::kCache].tensor, o2[0], c2.queue);
  index_write_pair(kv_cache_map(a1, o1, c1), kv_cache_map(a2, o2, c2), c1.queue);
}

// slice_scatter / select_scatter: self into out, then src into out's region.
Kernel view_scatter(bool select) {
  return [=](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
    const Tensor& out = outs[0];
    copy_self(a[0].tensor, out, ctx.queue);
    const Tensor region = indexing::view_scatter_region(
        select ? indexing::ViewScatter::kSelect : indexing::ViewScatter::kSlice, out, a);
    copy_cast(operand(region), operand(a[1].tensor, region.shape()), ctx.queue);
  };
}

// index / index_put with one advanced index (a 0-d or 1-D integer tensor at some dim, the
// others None); negative positions wrap.
std::string one_index_form(const Args& a) {
  int tensors = 0;
  for (const Value& v : a[1].items) {
    if (v.is_none()) continue;
    ++tensors;
    if (!v.is_tensor() || v.tensor.dim() > 1 || !is_integral(v.tensor.dtype(), false))
      return "an index other than a 0-d or 1-D integer tensor";
  }
  return tensors == 1 ? "" : "more than one advanced index";
}

std::string index_put_form(const Args& a) {
  if (a[3].as_bool("index_put")) return "accumulate=True";
  return one_index_form(a);
}

// out = self[..., index, ...]: a 0-d index drops its dim (out is seen with it kept, size 1).
void index_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& self = a[0].tensor;
  int64_t dim = 0;
  while (!a[1].items[dim].is_tensor()) ++dim;
  const Tensor& index = a[1].items[dim].tensor;
  const Tensor out = index.dim() == 0 ? outs[0].unsqueeze(dim) : outs[0];
  IndexMap m;
  m.values = operand(out);
  m.strided = strided_at(self, out.shape(), dim);
  m.index = index_along(index, out.shape(), dim);
  m.unit = self.stride(dim);
  m.extent = self.size(dim);
  m.wrap_negative = true;
  index_read(with_errors(m, ctx), ctx.queue);
}

void index_put_kernel(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor& out = outs[0];
  copy_self(a[0].tensor, out, ctx.queue);
  int64_t dim = 0;
  while (!a[1].items[dim].is_tensor()) ++dim;
  const Tensor& index = a[1].items[dim].tensor;
  Shape region = out.shape();
  region[dim] = index.dim() == 0 ? 1 : index.size(0);
  Tensor values = a[2].tensor;
  if (index.dim() == 0) {  // values fit the region without dim `dim`
    Shape without = out.shape();
    without.erase(without.begin() + dim);
    values = values.expand(without).unsqueeze(dim);
  }
  IndexMap m;
  m.values = operand(values, region);
  m.strided = strided_at(out, region, dim);
  m.index = index_along(index, region, dim);
  m.unit = out.stride(dim);
  m.extent = out.size(dim);
  m.wrap_negative = true;
  index_write(with_errors(m, ctx), ctx.queue);
}

}  // namespace

void register_index_kernels(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  t.add(C, "index_select", index_select_kernel);
  LaunchKernels::get().add_pair("index_select", index_select_pair);
  t.add(C, "gather", gather_kernel);
  t.add(C, "embedding",
        [](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
          constexpr indexing::EmbeddingOperands e = indexing::kEmbedding;
          embedding_kernel(a[e.weight].tensor, a[e.indices].tensor, outs[0], ctx);
        });
  LaunchKernels::get().add_pair("embedding", embedding_pair);
  // fused_embedding's gather widens the rows as it stores them (the kernel converts to out's
  // dtype).
  for (const char* name : {"embedding_functional", "fused_embedding"})
    t.add(C, name, [](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
      constexpr indexing::EmbeddingOperands e = indexing::kEmbeddingFunctional;
      embedding_kernel(a[e.weight].tensor, a[e.indices].tensor, outs[0], ctx);
    });
  t.add(C, "index_copy", index_copy_kernel);
  t.add(C, "kv_cache_update", kv_cache_update_kernel);
  LaunchKernels::get().add_pair("kv_cache_update", kv_cache_update_pair);
  t.add(C, "index_put", index_put_kernel, index_put_form);
  t.add(C, "index.Tensor", index_kernel, one_index_form);
  t.add(C, "_unsafe_index.Tensor", index_kernel, one_index_form);
  t.add(C, "_unsafe_index_put", index_put_kernel, index_put_form);
  t.add(C, "slice_scatter", view_scatter(false));
  t.add(C, "select_scatter", view_scatter(true));
}

}  // namespace inplace::cuda
