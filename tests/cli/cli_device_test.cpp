// The device on the command line: `inplace ops --device cuda` lists the CUDA coverage, and
// `inplace compile --device` refuses what this build or machine cannot run, naming why.
#include <gtest/gtest.h>

#include "backend/kernel_table.h"
#include "cli/cli_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

TEST_F(Cli, OpsListsTheCoverageOfADevice) {
  CliResult r = run("ops --device cuda --filter cumsum");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("out -"), std::string::npos) << r.out;  // no cuda kernel for cumsum
  EXPECT_NE(r.err.find("with a kernel on cuda"), std::string::npos) << r.err;
  r = run("ops --device cuda --filter 'add.Tensor('");
  ASSERT_EQ(r.code, 0) << r.err;
#ifdef INPLACE_WITH_CUDA
  EXPECT_EQ(r.out.find("out -"), std::string::npos) << r.out;  // add has one
#endif
  r = run("ops --device tpu");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("unknown device 'tpu'"), std::string::npos) << r.err;
}

TEST_F(Cli, CompileForADeviceThisMachineCannotRunIsRefused) {
  std::string why;
  if (device_available(Device::cuda(1), &why)) GTEST_SKIP() << "two GPUs here";
  const std::string graph = std::string(INPLACE_SOURCE_DIR) + "/examples/kv_cache_write/graph.json";
  CliResult r = run("compile " + graph + " --device cuda:1 -o " + path("e.inplace"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("targets device 'cuda:1'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inplace
