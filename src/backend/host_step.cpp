// Steps on the host (backend/host_step.h). Copies go through the backend, ordered on the call's
// queue, so a device whose queue does not follow the host's default order sees them in order.
#include "backend/host_step.h"

namespace inplace {

namespace {

// The argument leaf a tensor slot's path names (plans are checked when built or loaded).
Value& item_at(std::vector<Value>& args, const std::vector<int>& path) {
  Value* v = &args[path[0]];
  for (size_t k = 1; k < path.size(); ++k) v = &v->items[path[k]];
  return *v;
}

// The bytes a strided view spans in its storage: [lo, hi] elements around its offset.
void span_of(const Tensor& t, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    (t.strides()[d] < 0 ? *lo : *hi) += (t.size(d) - 1) * t.strides()[d];
}

// `dev`'s elements (memory of the backend's device) as a contiguous host tensor.
Tensor to_host(const Tensor& dev, const Backend& backend, void* queue) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype());
  if (dev.numel() == 0) return host;
  if (dev.is_contiguous()) {
    backend.copy_async(host.data_ptr(), dev.data_ptr(), host.nbytes(), queue);
    return host;
  }
  int64_t lo = 0, hi = 0;
  span_of(dev, &lo, &hi);
  Tensor span = Tensor::empty({hi - lo + 1}, dev.dtype());
  const int64_t item = static_cast<int64_t>(dev.itemsize());
  backend.copy_async(span.data_ptr(), static_cast<const char*>(dev.data_ptr()) + lo * item,
                     span.nbytes(), queue);
  backend.synchronize(queue);
  host.copy_from(Tensor(span.storage(), -lo, dev.shape(), dev.strides(), dev.dtype()));
  return host;
}

// Writes `host` (contiguous) into `dev`'s elements; a strided view's span is read, written on
// the host and copied back whole, so the bytes between its elements keep their values. The
// queue's work must be done (run_host_step waited for it).
void from_host(const Tensor& dev, const Tensor& host, const Backend& backend, void* queue,
               std::vector<Tensor>* keep) {
  if (dev.numel() == 0) return;
  if (dev.is_contiguous()) {
    backend.copy_async(dev.data_ptr(), host.data_ptr(), host.nbytes(), queue);
    keep->push_back(host);
    return;
  }
  int64_t lo = 0, hi = 0;
  span_of(dev, &lo, &hi);
  Tensor span = Tensor::empty({hi - lo + 1}, dev.dtype());
  const int64_t item = static_cast<int64_t>(dev.itemsize());
  char* base = static_cast<char*>(dev.data_ptr()) + lo * item;
  backend.copy_async(span.data_ptr(), base, span.nbytes(), queue);
  backend.synchronize(queue);
  Tensor(span.storage(), -lo, dev.shape(), dev.strides(), dev.dtype()).copy_from(host);
  backend.copy_async(base, span.data_ptr(), span.nbytes(), queue);
  keep->push_back(span);
}

}  // namespace

void run_host_step(const PreparedSteps& steps, size_t q, const Backend& backend, void* queue) {
  const Step& s = steps.plan->steps[q];
  const std::vector<Tensor>& outs = (*steps.outs)[q];
  backend.synchronize(queue);  // the operands are written by the work before this step
  std::vector<Value> args = (*steps.args)[q];
  std::vector<Tensor> operands;  // the device operands, by slot
  for (const TensorSlot& t : s.tensors) {
    Value& leaf = item_at(args, t.path);
    operands.push_back(leaf.tensor);
    leaf.tensor = to_host(leaf.tensor, backend, queue);
  }
  std::vector<Tensor> host_outs;
  for (const Tensor& o : outs) {
    Tensor h;
    for (size_t k = 0; k < operands.size() && !h.defined(); ++k)
      if (operands[k].same_view(o)) h = item_at(args, s.tensors[k].path).tensor;
    host_outs.push_back(h.defined() ? h : Tensor::empty(o.shape(), o.dtype()));
  }
  backend.synchronize(queue);
  KernelContext c;
  c.step = static_cast<int32_t>(q);
  run_step_on(s, (*steps.kernels)[q], args, host_outs, c);
  std::vector<Tensor> keep;  // host memory the copies read until they are done
  for (size_t k = 0; k < outs.size(); ++k) from_host(outs[k], host_outs[k], backend, queue, &keep);
  backend.synchronize(queue);
}

int64_t host_step_bytes(const Step& s) {
  int64_t n = 0;
  for (const TensorSlot& t : s.tensors)
    n += numel_of(t.ref.shape) * static_cast<int64_t>(dtype_size(t.ref.dtype));
  for (const TensorRef& o : s.outs)
    n += numel_of(o.shape) * static_cast<int64_t>(dtype_size(o.dtype));
  return n;
}

}  // namespace inplace
