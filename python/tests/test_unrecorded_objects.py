"""scripts/lib/unrecorded_objects.sh without a GPU: an object whose dependencies Ninja recorded as
none has its source touched (so the next build remakes it), one with recorded dependencies is
left alone, and a folder that is not a Ninja build is passed over."""
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import REPO

LIB = os.path.join(REPO, "scripts", "lib", "unrecorded_objects.sh")

# What `ninja -C DIR -t deps` prints, one object remade outside Ninja (no dependencies recorded).
DEPS = """CMakeFiles/inplace_kernels_cuda.dir/src/kernels/cuda/a.cu.o: #deps 0, deps mtime 1 (VALID)

CMakeFiles/inplace_kernels_cuda.dir/src/kernels/cuda/b.cu.o: #deps 2, deps mtime 1 (VALID)
    /x/src/kernels/cuda/b.cu
    /x/src/kernels/cuda/b.cuh

CMakeFiles/inplace_core.dir/src/core/c.cpp.o: #deps 0, deps mtime 1 (STALE)

tests/CMakeFiles/inplace_tests.dir/cuda/d_test.cpp.o: #deps 0, deps mtime 1 (VALID)

"""


class RemakeUnrecordedObjects(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        bin_dir = os.path.join(self.root, "bin")
        os.makedirs(bin_dir)
        fake = os.path.join(bin_dir, "ninja")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\ncat <<'END'\n%sEND\n" % DEPS)
        os.chmod(fake, 0o755)
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        self.sources = {}
        for rel in ("src/kernels/cuda/a.cu", "src/kernels/cuda/b.cu", "src/core/c.cpp",
                    "tests/cuda/d_test.cpp"):
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
            os.utime(path, (1000, 1000))
            self.sources[rel] = path

    def remake(self, build):
        return subprocess.run(["bash", "-c", 'source "$0"; remake_unrecorded_objects "$1"', LIB,
                               build], cwd=self.root, env=self.env, capture_output=True,
                              text=True, check=True).stdout

    def test_only_objects_without_recorded_dependencies_are_remade(self):
        os.makedirs(os.path.join(self.root, "build"))
        open(os.path.join(self.root, "build", "build.ninja"), "w").close()
        out = self.remake("build")
        touched = {rel for rel, p in self.sources.items() if os.stat(p).st_mtime > 1000}
        self.assertEqual(touched, {"src/kernels/cuda/a.cu", "src/core/c.cpp",
                                   "tests/cuda/d_test.cpp"})
        self.assertIn("src/kernels/cuda/a.cu: no dependencies recorded", out)
        self.assertNotIn("b.cu", out)

    def test_a_folder_without_a_ninja_build_is_passed_over(self):
        self.assertEqual(self.remake("missing"), "")
        self.assertTrue(all(os.stat(p).st_mtime == 1000 for p in self.sources.values()))


if __name__ == "__main__":
    unittest.main()
