// libFuzzer target: a program or engine loaded from a path keeps its weights whatever happens to
// the file afterwards. Each input (as given, then with its checksum repaired) is written to a
// file and loaded with load_program_or_engine, the path `inplace run`, `exec` and Python's
// `inplace.load` take; when it loads, the file is changed as the input's middle byte chooses:
// truncated (to a length the input picks), rewritten in place (every byte), or overwritten the
// way `cp` does it (O_TRUNC, then other bytes). Then every weight of every method is read whole
// and the program is described and serialized again: a weight that still pointed into the
// file's pages would fault (SIGBUS) or change here. Build and run: scripts/fuzz.sh loaded_file.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "checksum_repair.h"
#include "core/checksum.h"
#include "engine/engine_file.h"
#include "program/program_file.h"

namespace {

const std::string& path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/inplace_loaded_file_fuzz." +
           std::to_string(::getpid());
  }();
  return p;
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Truncates, rewrites or cp-overwrites the file, as `how` picks.
void change_file(const std::string& bytes, unsigned how) {
  const std::string& p = path();
  switch (how % 3) {
    case 0:
      (void)::truncate(p.c_str(), static_cast<off_t>((how / 3) % (bytes.size() + 1)));
      return;
    case 1: {
      int fd = ::open(p.c_str(), O_WRONLY);
      if (fd < 0) return;
      (void)write_all(fd, std::string(bytes.rbegin(), bytes.rend()));
      ::close(fd);
      return;
    }
    default: {
      int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC);
      if (fd < 0) return;
      (void)write_all(fd, bytes.substr(0, bytes.size() / 2) + std::string(how % 97, '\xff'));
      ::close(fd);
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const unsigned how = size ? data[size / 2] * 7u + data[0] : 0u;
  inplace::fuzz::try_as_given_and_repaired(data, size, [&](const std::string& b) {
    {
      int fd = ::open(path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) std::abort();
      if (!write_all(fd, b)) std::abort();
      ::close(fd);
    }
    std::shared_ptr<const inplace::Program> program;
    try {
      program = inplace::load_program_or_engine(path());
    } catch (const inplace::Error&) {
      return;
    }
    // The same bytes loaded from memory (weights copied): what the file's program must keep.
    std::shared_ptr<const inplace::Program> expected =
        inplace::is_engine_file(b)
            ? inplace::program_from_engine(inplace::deserialize_engine(b, "<fuzz>"))
            : inplace::deserialize_program(b, "<fuzz>");
    change_file(b, how);
    auto sums = [](const inplace::Program& p) {
      std::vector<uint64_t> out;
      for (const inplace::Method& m : p.methods())
        for (const inplace::Tensor& t : m.engine->plan().constants)
          out.push_back(inplace::checksum64(t.nbytes() ? t.data_ptr() : "", t.nbytes()));
      return out;
    };
    if (sums(*program) != sums(*expected)) std::abort();  // a weight changed under the program
    (void)program->describe();
    try {
      (void)inplace::serialize_program(*program);
    } catch (const inplace::Error&) {
    }
  });
  ::unlink(path().c_str());
  return 0;
}
