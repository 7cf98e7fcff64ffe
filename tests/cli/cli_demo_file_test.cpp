// `inplace demo --save FILE` then `--load FILE`: the tiny model's engines saved as one program
// file and decoded from it memory-mapped, checked against the eager interpreter, the same tokens
// as the compiled run, and the peak memory while decoding printed against weights + caches +
// arenas. Loading with other options is refused naming the file.
#include "cli/cli_util.h"

using namespace inplace::testing;

namespace {

std::string line_with(const std::string& out, const std::string& prefix) {
  size_t at = out.find(prefix);
  if (at == std::string::npos) return "";
  return out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST_F(Cli, DemoSavesAndDecodesFromTheMappedFile) {
  const std::string file = path("tiny.inplace");
  const std::string opts = "demo --size tiny --steps 12 --s-max 64 --prompt-len 8";
  CliResult saved = run(opts + " --save " + file, 120);
  ASSERT_EQ(saved.code, 0) << saved.out << saved.err;
  EXPECT_NE(saved.out.find("saved both engines to " + file), std::string::npos) << saved.out;

  CliResult loaded = run(opts + " --load " + file, 120);
  ASSERT_EQ(loaded.code, 0) << loaded.out << loaded.err;
  EXPECT_NE(loaded.out.find("loaded " + file + " (memory-mapped)"), std::string::npos)
      << loaded.out;
  EXPECT_NE(loaded.out.find("checked against the eager interpreter"), std::string::npos);
  EXPECT_EQ(line_with(loaded.out, "tokens:"), line_with(saved.out, "tokens:")) << loaded.out;
  EXPECT_NE(line_with(loaded.out, "peak memory while decoding").find("(weights "),
            std::string::npos)
      << loaded.out;

  CliResult other =
      run("demo --size tiny --steps 12 --s-max 32 --prompt-len 8 --load " + file, 120);
  EXPECT_EQ(other.code, 1) << other.out << other.err;
  EXPECT_NE(other.err.find(file), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--s-max"), std::string::npos) << other.err;
}
