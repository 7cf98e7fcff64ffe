#include "core/device.h"

#include "core/error.h"

namespace inplace {

const char* device_type_name(DeviceType type) {
  return type == DeviceType::kCuda ? "cuda" : "cpu";
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : str_cat(device_type_name(type), ":", index);
}

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() < 9 &&
      s.find_first_not_of("0123456789", 5) == std::string::npos)
    return cuda(std::stoi(s.substr(5)));
  IP_FAIL(kInvalidArgument, "[device] unknown device '", s, "' (expected cpu, cuda or cuda:N)");
}

}  // namespace inplace
