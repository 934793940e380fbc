"""C++ operator plugins as an outside project sees them.

Installs the Development component of the build (headers and the CMake
package) to a temporary prefix, builds scripts/ops with find_package(Tessera)
there, loads the result with --load-ops and with mx.operator.load, and checks
the command line's errors. Run by CTest (plugin_package_test), which sets:
TESSERA_BIN, TESSERA_BUILD_DIR, TESSERA_SOURCE_DIR, TESSERA_CXX,
TESSERA_TEST_PLUGIN_DIR (the in-tree test plugins) and TESSERA_EXAMPLE_OPS.
"""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest

BIN = os.environ["TESSERA_BIN"]
BUILD = os.environ["TESSERA_BUILD_DIR"]
SOURCE = os.environ["TESSERA_SOURCE_DIR"]
CXX = os.environ.get("TESSERA_CXX", "c++")
PLUGIN_DIR = os.environ["TESSERA_TEST_PLUGIN_DIR"]


def run(*args, env=None, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=600,
                          env=env, **kw)


def check(result, what):
    if result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (what, result.returncode,
                                                          result.stdout, result.stderr))
    return result


class OutsideProject(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tessera_plugin_")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        check(run("cmake", "--install", BUILD, "--prefix", cls.prefix,
                  "--component", "Development"), "cmake --install")
        build = os.path.join(cls.tmp, "build-ops")
        check(run("cmake", "-S", os.path.join(SOURCE, "scripts", "ops"), "-B", build,
                  "-DCMAKE_PREFIX_PATH=" + cls.prefix, "-DCMAKE_CXX_COMPILER=" + CXX),
              "configuring scripts/ops")
        r = check(run("cmake", "--build", build, "-j2"), "building scripts/ops")
        cls.build_log = r.stdout + r.stderr
        cls.lib = os.path.join(build, "libtessera_example_ops.so")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_package_files(self):
        for rel in ["include/tessera/ops/custom/op_plugin.h",
                    "include/tessera/engine/legacy_op/simple_op.h",
                    "include/tessera/engine/base/tblob.h",
                    "lib/cmake/Tessera/TesseraConfig.cmake",
                    "lib/cmake/Tessera/TesseraConfigVersion.cmake",
                    "lib/cmake/Tessera/TesseraOpLibrary.cmake"]:
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, rel)), rel)
        # Development only: no executable, no engine library.
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "bin")))
        self.assertEqual(glob.glob(os.path.join(self.prefix, "lib", "*.a")), [])

    def test_plugin_built_without_warnings_or_engine(self):
        self.assertTrue(os.path.isfile(self.lib))
        self.assertNotIn("warning", self.build_log)
        # Its undefined symbols are the registry's: nothing links the engine in.
        needed = check(run("readelf", "-d", self.lib), "readelf").stdout
        self.assertNotIn("tessera_engine", needed)
        symbols = check(run("nm", "-D", "--undefined-only", "-C", self.lib), "nm").stdout
        self.assertIn("tessera::op::Op::Register", symbols)

    def test_every_installed_header_compiles(self):
        include = os.path.join(self.prefix, "include", "tessera")
        headers = []
        for path in sorted(glob.glob(os.path.join(include, "**", "*.h"), recursive=True)):
            with open(path) as f:
                if "cuda_runtime" in f.read():
                    continue  # the CUDA build's headers need the toolkit
            headers.append(os.path.relpath(path, include))
        self.assertGreater(len(headers), 20)
        source = "".join('#include "%s"\n' % h for h in headers)
        r = run(CXX, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-I", include,
                "-x", "c++", "-", input=source)
        check(r, "compiling the installed headers")

    def test_load_ops_then_lua_tests(self):
        env = dict(os.environ, TESSERA_EXAMPLE_OPS=self.lib)
        r = run(BIN, "--load-ops", self.lib, "--test",
                os.path.join(SOURCE, "tests", "plugin", "example_ops_test.lua"), env=env)
        check(r, "tessera --load-ops ... --test example_ops_test.lua")
        self.assertIn("0 failed", r.stdout + r.stderr)

    def test_mx_operator_load_from_a_script(self):
        code = ("local names = mx.operator.load(%r)\n"
                "print(table.concat(names, ' '))\n"
                "print(mx.nd.plugin_quadratic(mx.nd.array({1, 2}), {a = 1, c = 1}):totable()[2])\n"
                % self.lib)
        r = check(run(BIN, "-e", code), "mx.operator.load")
        self.assertEqual(r.stdout.split("\n")[:2],
                         ["plugin_quadratic _backward_plugin_quadratic plugin_smooth_l1 "
                          "_backward_plugin_smooth_l1", "5"])


class CommandLine(unittest.TestCase):
    def test_load_ops_repeatable_and_before_e(self):
        example = os.environ["TESSERA_EXAMPLE_OPS"]
        r = check(run(BIN, "--load-ops", example, "--load-ops", example, "-e",
                      "print(mx.nd.plugin_smooth_l1(mx.nd.array({2}), {scalar = 1}):totable()[1])"),
                  "--load-ops twice")
        self.assertEqual(r.stdout.strip(), "1.5")

    def test_missing_file_exits_1_before_running_anything(self):
        r = run(BIN, "--load-ops", "/nonexistent/libx.so", "-e", "print('ran')")
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("ran", r.stdout)
        self.assertIn("cannot load operator plugin '/nonexistent/libx.so': no such file",
                      r.stderr)

    def test_bad_plugins_exit_1_with_the_reason(self):
        cases = {"no_entry": "is not a Tessera operator plugin",
                 "bad_version": "ABI version",
                 "duplicate_op": "operator 'quadratic' already exists"}
        for name, reason in cases.items():
            path = os.path.join(PLUGIN_DIR, "libtessera_test_%s.so" % name)
            r = run(BIN, "--load-ops", path, "-e", "print('ran')")
            self.assertEqual(r.returncode, 1, name)
            self.assertNotIn("ran", r.stdout)
            self.assertIn(path, r.stderr)
            self.assertIn(reason, r.stderr)

    def test_missing_argument_and_help(self):
        r = run(BIN, "--load-ops")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--load-ops needs an argument", r.stderr)
        self.assertIn("--load-ops PATH", check(run(BIN, "--help"), "--help").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
