#include "kernels/cuda/device_runtime.h"

namespace inplace::cuda {

namespace {
thread_local std::vector<Tensor>* g_keep_alive = nullptr;
}  // namespace

void keep_for_graph(const Tensor& t) {
  if (g_keep_alive) g_keep_alive->push_back(t);
}

void set_graph_keep_alive(std::vector<Tensor>* list) {
  g_keep_alive = list;
}

}  // namespace inplace::cuda
