// Where a tensor's bytes live: the host (`cpu`) or one GPU (`cuda:N`). Every Storage has one;
// an engine is built for one and refuses tensors of another.
#pragma once
#include <cstdint>
#include <string>

namespace inplace {

enum class DeviceType : uint8_t { kCpu, kCuda };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceType::kCuda, index}; }
  // "cpu", "cuda", "cuda:1"; anything else is an error naming the spelling.
  static Device parse(const std::string& spelling);

  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

const char* device_type_name(DeviceType type);  // "cpu", "cuda"

}  // namespace inplace
