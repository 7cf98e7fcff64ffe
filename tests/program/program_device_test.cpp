// Programs and their device, on any machine (the GPU runs are tests/cuda/cuda_program_test.cpp):
// the device is recorded in the program and its file; compiling or loading for a device this
// machine cannot run is refused naming the method and the reason; a file recorded for cuda
// loads on the cpu when the caller picks it; weights go to a device once for every method
// (DeviceWeights); Session::run takes a queue and reset(queue) keeps every address.
#include <cstdio>
#include <cstring>

#include "backend/backend.h"
#include "engine/engine_file.h"
#include "program/program_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<std::vector<Tensor>> run_calls(Session& s, const std::vector<Call>& calls,
                                           const std::vector<void*>& queues = {nullptr}) {
  std::vector<std::vector<Tensor>> out;
  for (size_t k = 0; k < calls.size(); ++k)
    out.push_back(s.run(calls[k].method, calls[k].inputs, queues[k % queues.size()]));
  return out;
}

uint64_t u64_at(const std::string& b, size_t pos) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + pos, 8);
  return v;
}
std::string u64_bytes(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 8);
}
std::string with_checksum(std::string b) {
  return b + u64_bytes(engine_file_checksum(b));
}

// An engine file's bytes recorded for `device`: its TARGET_DEVICE field (the second, after the
// name) rewritten and the checksum recomputed.
std::string engine_for(const std::string& engine, const std::string& device) {
  const size_t device_at = 16 + 8 + u64_at(engine, 16);
  const size_t rest = device_at + 8 + u64_at(engine, device_at);
  return with_checksum(engine.substr(0, device_at) + u64_bytes(device.size()) + device +
                       engine.substr(rest, engine.size() - 8 - rest));
}

// A program file's bytes with every method recorded for `device`. Only for a program without
// weights or initial values: its WEIGHTS field holds no offset that the longer METHODS moves.
std::string program_for(const std::string& bytes, const std::string& device) {
  std::vector<std::string> fields;
  size_t pos = 16;
  for (uint32_t k = 0; k < kProgramFileFieldCount; ++k) {
    const uint64_t n = u64_at(bytes, pos);
    fields.push_back(bytes.substr(pos + 8, n));
    pos += 8 + n;
  }
  const std::string& methods = fields[kProgramFieldMethods];
  uint32_t count = 0;
  std::memcpy(&count, methods.data(), 4);
  std::string out = methods.substr(0, 4);
  size_t at = 4;
  for (uint32_t m = 0; m < count; ++m) {
    const size_t name_end = at + 8 + u64_at(methods, at);
    uint32_t weights = 0;
    std::memcpy(&weights, methods.data() + name_end, 4);
    EXPECT_EQ(weights, 0u) << "program_for takes a program without weights";
    const size_t engine_at = name_end + 4 + 4 * weights;
    const uint64_t engine_len = u64_at(methods, engine_at);
    const std::string engine = engine_for(methods.substr(engine_at + 8, engine_len), device);
    out += methods.substr(at, engine_at - at) + u64_bytes(engine.size()) + engine;
    at = engine_at + 8 + engine_len;
  }
  fields[kProgramFieldMethods] = out;
  std::string file = bytes.substr(0, 16);
  for (const std::string& f : fields) file += u64_bytes(f.size()) + f;
  return with_checksum(file);
}

// x.add_(1); return x * 2: a program whose only state is the caller's x (no weights).
std::shared_ptr<const Program> weightless_program() {
  GraphBuilder b("bump");
  Node* x = b.placeholder("x");
  b.call_method("add_", {x, 1.0});
  b.output(arg::tuple({b.call_function("_operator.mul", {x, 2.0})}));
  static std::unique_ptr<Graph> g = b.build();
  return compile_program({{"forward", g.get(), {Tensor::zeros({3}, DType::kFloat32)}, {}}});
}

TEST(ProgramDevice, TheDeviceIsRecordedInTheProgramAndItsFile) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  EXPECT_EQ(program->device(), Device::cpu());
  EXPECT_NE(program->describe().find("program program on cpu:"), std::string::npos)
      << program->describe();
  const std::string bytes = serialize_program(*program);
  EXPECT_NE(bytes.find("device=cpu\n"), std::string::npos);  // METADATA
  EXPECT_EQ(deserialize_program(bytes, "<memory>")->device(), Device::cpu());
}

TEST(ProgramDevice, CompilingForADeviceThisMachineCannotRunIsRefusedNamingTheMethod) {
  std::string why;
  if (device_available(Device::cuda(), &why)) GTEST_SKIP() << "this machine has a GPU";
  DecoderGraphs g = decoder_graphs(false);
  ProgramOptions options;
  options.device = Device::cuda();
  const std::string err = error_of([&] { decoder_program(g, false, options); });
  EXPECT_TRUE(mentions(err, {"[compile_program] method 'prefill' for device 'cuda:0'", why}))
      << err;
}

TEST(ProgramDevice, AFileRecordedForCudaIsRefusedWithoutAGpuAndLoadsOnTheCpuWhenAsked) {
  auto program = weightless_program();
  ASSERT_TRUE(program->weights().empty());
  const std::string cuda = program_for(serialize_program(*program), "cuda:0");
  std::string why;
  if (device_available(Device::cuda(), &why)) {
    EXPECT_EQ(deserialize_program(cuda, "gpu.inplace")->device(), Device::cuda());
  } else {
    const std::string err = error_of([&] { deserialize_program(cuda, "gpu.inplace"); });
    EXPECT_TRUE(
        mentions(err, {"gpu.inplace: method 'forward'",
                       "engine targets device 'cuda:0', which this machine cannot run", why}))
        << err;
  }
  // The caller picks the device: the same file runs on the cpu.
  auto on_cpu = deserialize_program(cuda, "gpu.inplace", nullptr, Device::cpu());
  EXPECT_EQ(on_cpu->device(), Device::cpu());
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  auto s = on_cpu->new_session();
  const Tensor y = s->run("forward", {{"x", x}})[0];
  EXPECT_EQ(x.to_double_vector(), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{4, 6, 8}));
}

TEST(ProgramDevice, LoadingForADeviceThisMachineCannotRunIsRefusedNamingTheFileAndMethod) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  const std::string path = ::testing::TempDir() + "/program_device_test.inplace";
  save_program(*program, path);
  std::string why;
  if (!device_available(Device::cuda(), &why)) {
    const std::string err = error_of([&] { load_program(path, Device::cuda()); });
    EXPECT_TRUE(mentions(err, {path, "method 'prefill'", "loading for device 'cuda:0'", why}))
        << err;
  }
  auto loaded = load_program(path, Device::cpu());
  std::vector<Call> calls = conversation(3, 2, 90);
  auto a = program->new_session(), b = loaded->new_session();
  expect_outputs_equal(run_calls(*b, calls), run_calls(*a, calls), "loaded for the cpu");
  std::remove(path.c_str());
}

TEST(ProgramDevice, DeviceWeightsUploadEachHostStorageOnceWhileHeld) {
  DeviceWeights uploads;
  const Device device = Device::cpu();  // the sharing rule is the same on every device
  Tensor w = seeded_uniform({4, 4}, 3);
  auto first = uploads.upload(w.storage(), device);
  EXPECT_NE(first->data(), w.storage()->data());
  EXPECT_EQ(std::memcmp(first->data(), w.data_ptr(), w.nbytes()), 0);
  // The same memory seen through another storage (a borrowed view of it) is the same weight.
  auto borrowed = Storage::borrow(w.storage()->data(), w.storage()->nbytes());
  EXPECT_EQ(uploads.upload(borrowed, device), first);
  EXPECT_EQ(uploads.uploads(), 1);
  Tensor other = seeded_uniform({4, 4}, 4);
  EXPECT_NE(uploads.upload(other.storage(), device), first);
  EXPECT_EQ(uploads.uploads(), 2);
  first.reset();  // no engine holds the copy any more: the next one uploads again
  EXPECT_TRUE(uploads.upload(w.storage(), device));
  EXPECT_EQ(uploads.uploads(), 3);
}

TEST(ProgramDevice, SessionRunTakesAQueueAndResetOnAQueueKeepsEveryAddress) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  const Backend& backend = backend_for(program->device());
  std::vector<void*> queues = {backend.create_queue(), backend.create_queue(), nullptr};
  std::vector<Call> calls = conversation(4, 3, 100);
  auto plain = program->new_session();
  auto queued = program->new_session();
  std::map<std::string, void*> addresses;
  for (const char* n : {"layers.0.k_cache", "layers.0.count"})
    addresses[n] = queued->state(n).data_ptr();
  const auto want = run_calls(*plain, calls);
  expect_outputs_equal(run_calls(*queued, calls, queues), want, "calls over three queues");
  queued->synchronize();
  queued->reset(queues[1]);
  for (const auto& [n, address] : addresses) EXPECT_EQ(queued->state(n).data_ptr(), address) << n;
  EXPECT_EQ(queued->state("layers.0.count").to_double_vector(), std::vector<double>{0});
  expect_outputs_equal(run_calls(*queued, calls, queues), want, "after reset(queue)");
  for (const auto& [n, address] : addresses) EXPECT_EQ(queued->state(n).data_ptr(), address) << n;
  expect_outputs_equal(want, run_eager_conversation(g, calls, false).outputs, "against eager");
  for (void* q : queues) backend.destroy_queue(q);
}

}  // namespace
