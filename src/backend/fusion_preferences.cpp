#include "backend/fusion_preferences.h"

namespace inplace {

FusionPreferences fusion_preferences(DeviceType device) {
  switch (device) {
    case DeviceType::kCpu:
      return cpu_fusion_preferences();
    case DeviceType::kCuda:
#ifdef INPLACE_WITH_CUDA
      return cuda_fusion_preferences();
#else
      break;
#endif
  }
  return {};  // a device this build does not serve: no decode fusion (its engine is refused)
}

}  // namespace inplace
