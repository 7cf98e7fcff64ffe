#include "program/next_token.h"

#include <algorithm>

#include "backend/kernel_table.h"
#include "core/device_allocator.h"
#include "core/error.h"
#include "ops/registry.h"
#include "ops/sampling_weight.h"

namespace inplace {

namespace {

// At most this many candidates come to the host for a nucleus over every token.
constexpr int64_t kNucleusCandidates = 1024;

Tensor last_row_of(const Tensor& logits, int64_t vocab) {
  Tensor rows = logits.reshape({-1, vocab});
  IP_CHECK(rows.shape()[0] >= 1, kInvalidArgument, "[generate] the logits have no row");
  return rows.select(0, rows.shape()[0] - 1);
}

std::vector<double> host_row(const Tensor& logits, int64_t vocab) {
  const Tensor row = last_row_of(logits, vocab);
  return (row.device().is_cpu() ? row : row.to_device(Device::cpu())).to_double_vector();
}

// The kernel of `name` on `device` for `args`, or null where there is none or it refuses them.
const Kernel* device_kernel(const char* name, DeviceType device, const Args& args) {
  const OpDef* op = Registry::get().find(name);
  const Kernel* kernel = op ? KernelTable::get().find(*op, device) : nullptr;
  if (!kernel) return nullptr;
  if (const Supports* supports = KernelTable::get().supports(*op, device))
    if (!(*supports)(args).empty()) return nullptr;
  return kernel;
}

// Greedy on a device: the argmax of the row there (the first maximum, as torch.argmax), and
// 8 bytes to the host instead of the row.
int64_t device_argmax(const Tensor& row) {
  const Args args = {Value::from_tensor(row), Value::none(), Value::boolean(false)};
  const Kernel* kernel = device_kernel("argmax", row.device().type, args);
  IP_CHECK(kernel != nullptr, kInternal, "[generate] no argmax kernel on ", row.device().str());
  Tensor index = Tensor::empty({}, DType::kInt64, row.device());
  KernelContext c;  // the default queue, where the session's calls of generate() run
  (*kernel)(args, {index}, c);
  return index.to_device(Device::cpu()).data<int64_t>()[0];
}

// The k largest of the row by the device's topk (in the host's order: logit descending, the
// smaller index first among equals, NaN first), k values and indices to the host in one copy.
// False where the device's kernel does not take the row's dtype or k (CUDA: k <= 1024).
bool device_top_k(const Tensor& row, int64_t k, std::vector<double>* values,
                  std::vector<int64_t>* tokens) {
  const Device device = row.device();
  k = std::min(k, row.numel());
  const Args args = {Value::from_tensor(row), Value::integer(k), Value::integer(0),
                     Value::boolean(true), Value::boolean(true)};
  const Kernel* kernel = device_kernel("topk", device.type, args);
  if (!kernel) return false;
  // Indices then values in one allocation, so one copy brings both.
  const size_t width = dtype_size(row.dtype());
  const size_t nbytes = static_cast<size_t>(k) * (sizeof(int64_t) + width);
  auto storage = Storage::allocate(nbytes, device);
  const Tensor indices(storage, 0, {k}, {1}, DType::kInt64);
  const Tensor top(storage, k * static_cast<int64_t>(sizeof(int64_t) / width), {k}, {1},
                   row.dtype());
  KernelContext c;
  (*kernel)(args, {top, indices}, c);
  auto host = Storage::allocate(nbytes, Device::cpu());
  device_allocator(device).copy_to_host(host->data(), storage->data(), nbytes);
  const Tensor host_indices(host, 0, {k}, {1}, DType::kInt64);
  *values = Tensor(host, top.offset(), {k}, {1}, row.dtype()).to_double_vector();
  tokens->assign(host_indices.data<int64_t>(), host_indices.data<int64_t>() + k);
  return true;
}

// sample_row on the device: the whole row's draw (or, for draw 0, its total) and its first NaN,
// 24 bytes to the host. False where the device has no kernel for the row.
bool device_sample_row(const Tensor& row, double temperature, uint64_t draw,
                       sampling::RowDraw* out) {
  const Args args = {Value::from_tensor(row), Value::floating(temperature),
                     Value::integer(static_cast<int64_t>(draw))};
  const Kernel* kernel = device_kernel("sample_row", row.device().type, args);
  if (!kernel) return false;
  Tensor result = Tensor::empty({3}, DType::kInt64, row.device());
  KernelContext c;
  (*kernel)(args, {result}, c);
  const Tensor host = result.to_device(Device::cpu());
  *out = {host.data<int64_t>()[0], host.data<int64_t>()[1], host.data<int64_t>()[2]};
  if (out->first_nan >= 0) Sampler::refuse_nan(out->first_nan);
  return true;
}

}  // namespace

int64_t next_token(Sampler& sampler, const Tensor& logits, int64_t vocab) {
  if (logits.device().is_cpu()) return sampler.next(host_row(logits, vocab));
  const Tensor row = last_row_of(logits, vocab);
  if (sampler.greedy()) return device_argmax(row);
  const SamplingOptions& o = sampler.options();
  std::vector<double> values;
  std::vector<int64_t> tokens;
  sampling::RowDraw d;
  if (o.top_k > 0) {
    if (device_top_k(row, o.top_k, &values, &tokens))
      return sampler.next_from_top_k(values, tokens);
  } else if (sampler.draws_whole_row()) {
    const uint64_t draw = sampler.next_draw();
    if (device_sample_row(row, o.temperature, draw, &d)) return d.token;
    const std::vector<double> x = host_row(logits, vocab);  // the same draw on the host
    d = sampling::draw_in_order(x.data(), vocab, o.temperature, draw);
    if (d.first_nan >= 0) Sampler::refuse_nan(d.first_nan);
    return d.token;
  } else if (device_sample_row(row, o.temperature, 0, &d) &&
             device_top_k(row, kNucleusCandidates, &values, &tokens)) {
    const int64_t token = sampler.next_from_nucleus(values, tokens, d.total);
    if (token >= 0) return token;
  }
  return sampler.next(host_row(logits, vocab));
}

}  // namespace inplace
