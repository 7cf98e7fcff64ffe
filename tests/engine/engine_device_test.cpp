// The device seam without a GPU: devices parse and print, tensors and storage know theirs, an
// engine for a device this machine cannot run is refused with the reason, an op with no kernel
// for the engine's device is refused in strict mode naming the node and the op (else it goes to
// the host with a warning naming it, tests/engine/host_steps_test.cpp), and an engine file carries
// its device (a cuda engine loaded where no GPU is gives a clear error).
#include <gtest/gtest.h>

#include "backend/kernel_table.h"
#include "compiler/compile.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "test_util.h"

using namespace inplace;

namespace {

std::unique_ptr<Graph> graph_with(const std::string& target) {
  return read_graph_json_string(R"({"format": "inplace.graph", "version": 1, "name": "g",
    "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
      {"name": "y", "op": "call_function", "target": ")" +
                                    target + R"(",
       "args": [{"node": "x"}, 0], "kwargs": {}},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "y"}],
       "kwargs": {}}]})",
                                "test");
}

TEST(DeviceSeam, DevicesParseAndPrint) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "CUDA"}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceSeam, TensorsAndStorageKnowTheirDevice) {
  Tensor t = Tensor::empty({2, 3}, DType::kFloat32);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.storage()->device(), Device::cpu());
  EXPECT_EQ(Tensor::meta({2}, DType::kInt64).device(), Device::cpu());
  Tensor moved = t.transpose(0, 1).to_device(Device::cpu());
  EXPECT_TRUE(moved.is_contiguous());
  EXPECT_FALSE(moved.same_storage(t));
}

TEST(DeviceSeam, EveryPlannedOpHasACpuKernel) {
  const KernelTable& table = KernelTable::get();
  for (const OpDef* op : Registry::get().all())
    EXPECT_EQ(table.find(*op, DeviceType::kCpu) != nullptr, static_cast<bool>(op->infer))
        << op->schema.full_name();
  EXPECT_NE(table.copy_kernel(DeviceType::kCpu), nullptr);
}

TEST(DeviceSeam, CudaEngineRefusedWithTheReason) {
  auto g = graph_with("aten.cumsum.default");
  CompileOptions o;
  o.device = Device::cuda();
  o.strict_device = true;
  std::string why;
  const bool gpu = device_available(Device::cuda(), &why);
  try {
    compile(*g, {Tensor::empty({4}, DType::kFloat32)}, o);
    ADD_FAILURE() << "compiled cumsum for cuda in strict mode";
  } catch (const Error& e) {
    const std::string msg = e.what();
#ifdef INPLACE_WITH_CUDA
    // Coverage is checked before the device's presence: the op is named with or without a GPU.
    EXPECT_NE(msg.find("node 'y': op 'cumsum' has no kernel for device 'cuda:0'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("inplace ops --device cuda"), std::string::npos) << msg;
#else
    EXPECT_NE(msg.find("no CUDA backend"), std::string::npos) << msg;
#endif
  }
#ifdef INPLACE_WITH_CUDA
  // Not strict: the step goes to the host, named in a warning, before the device's presence.
  o.strict_device = false;
  ::testing::internal::CaptureStderr();
  std::string error;
  try {
    compile(*g, {Tensor::empty({4}, DType::kFloat32)}, o);
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("inplace: warning: [engine] 'g': node 'y': op 'cumsum' has no kernel for "
                         "device 'cuda:0'; runs on the host, moving 32 bytes per call"),
            std::string::npos)
      << warning;
  EXPECT_EQ(error.empty(), gpu) << error;
#endif
  if (gpu) return;
  // An op the backend covers, on a machine without the device: the reason, not a crash.
  auto ok = graph_with("aten.mul.Scalar");
  try {
    compile(*ok, {Tensor::empty({4}, DType::kFloat32)}, o);
    ADD_FAILURE() << "compiled for cuda without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("targets device 'cuda:0': " + why), std::string::npos)
        << e.what();
  }
}

TEST(DeviceSeam, EngineFilesCarryTheirDevice) {
  auto g = graph_with("aten.mul.Scalar");
  CompiledProgram cp = compile(*g, {Tensor::empty({4}, DType::kFloat32)});
  std::string bytes = serialize_engine(*cp.engine);
  EXPECT_NE(bytes.find("cpu"), std::string::npos);
  EXPECT_EQ(deserialize_engine(bytes, "mem")->device(), Device::cpu());
  std::string why;
  if (device_available(Device::cuda(), &why)) {
    CompileOptions o;
    o.device = Device::cuda();
    CompiledProgram gpu = compile(*g, {Tensor::empty({4}, DType::kFloat32)}, o);
    EXPECT_EQ(deserialize_engine(serialize_engine(*gpu.engine), "mem")->device(), Device::cuda());
    return;
  }
  // A cuda engine's file where this machine has no GPU: the device field rewritten, the
  // checksum recomputed.
  const size_t at = bytes.find("cpu");
  std::string cuda = bytes.substr(0, at - 8);
  const uint64_t n = 6;
  cuda.append(reinterpret_cast<const char*>(&n), 8);
  cuda += "cuda:0" + bytes.substr(at + 3, bytes.size() - 8 - (at + 3));
  const uint64_t sum = engine_file_checksum(cuda);
  cuda.append(reinterpret_cast<const char*>(&sum), 8);
  try {
    deserialize_engine(cuda, "gpu.inplace");
    ADD_FAILURE() << "loaded a cuda engine without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu.inplace: engine targets device 'cuda:0', which "
                                         "this machine cannot run: " +
                                         why),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
