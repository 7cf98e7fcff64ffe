#include "backend/device_runtime.h"

namespace inplace {

namespace {
const DeviceRuntime* g_runtimes[8] = {};
thread_local std::vector<Tensor>* g_keep_alive = nullptr;
}  // namespace

void keep_for_graph(const Tensor& t) {
  if (g_keep_alive) g_keep_alive->push_back(t);
}

void set_graph_keep_alive(std::vector<Tensor>* list) {
  g_keep_alive = list;
}

void register_device_runtime(DeviceType type, const DeviceRuntime* runtime) {
  g_runtimes[static_cast<int>(type)] = runtime;
}

const DeviceRuntime* device_runtime(DeviceType type) {
  return g_runtimes[static_cast<int>(type)];
}

}  // namespace inplace
