// The cpu kernel of sample_row (ops/sample_row_ops.cpp): the row read once into doubles, then
// ops/sampling_weight.h's draw in index order, the definition the device kernels reproduce.
#include "kernels/cpu/registration.h"
#include "ops/sampling_weight.h"

namespace inplace::cpu {

namespace {

void run_sample_row(const Args& a, const std::vector<Tensor>& outs, const KernelContext&) {
  const std::vector<double> x = a[0].tensor.to_double_vector();
  const sampling::RowDraw d = sampling::draw_in_order(x.data(), static_cast<int64_t>(x.size()),
                                                      a[1].as_double("temperature"),
                                                      static_cast<uint64_t>(a[2].as_int("draw")));
  int64_t* out = outs[0].data<int64_t>();
  out[0] = d.token;
  out[1] = d.total;
  out[2] = d.first_nan;
}

}  // namespace

void register_sample_row_kernels(KernelTable& t) {
  t.add(DeviceType::kCpu, "sample_row", run_sample_row);
}

}  // namespace inplace::cpu
