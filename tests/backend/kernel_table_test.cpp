// The kernel table holds every backend of the build, registered through the one function above
// the backends (register_builtin_backends), and answers how many devices each has: the backend
// layer itself names no backend.
#include <gtest/gtest.h>

#include <string>

#include "backend/kernel_table.h"
#include "ops/registry.h"

using namespace inplace;

TEST(KernelTable, HoldsTheCpuBackend) {
  const KernelTable& table = KernelTable::get();
  EXPECT_NE(table.copy_kernel(DeviceType::kCpu), nullptr);
  const OpDef* add = Registry::get().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_NE(table.find(*add, DeviceType::kCpu), nullptr);
  EXPECT_EQ(table.device_count(DeviceType::kCpu), -1);  // the cpu is always there
  EXPECT_TRUE(device_available(Device::cpu()));
}

TEST(KernelTable, CountsTheDevicesOfEachBackendItHas) {
  const KernelTable& table = KernelTable::get();
  const int n = table.device_count(DeviceType::kCuda);
  std::string why;
#ifdef INPLACE_WITH_CUDA
  ASSERT_GE(n, 0);
  EXPECT_FALSE(table.covered(DeviceType::kCuda).empty());
  EXPECT_NE(table.copy_kernel(DeviceType::kCuda), nullptr);
  EXPECT_EQ(device_available(Device::cuda(0)), n > 0);
  EXPECT_FALSE(device_available(Device::cuda(n), &why));
  EXPECT_NE(why.find(n == 0 ? "no CUDA device" : "CUDA device(s)"), std::string::npos) << why;
#else
  EXPECT_EQ(n, -1);
  EXPECT_TRUE(table.covered(DeviceType::kCuda).empty());
  EXPECT_FALSE(device_available(Device::cuda(0), &why));
  EXPECT_NE(why.find("no CUDA backend"), std::string::npos) << why;
#endif
}
