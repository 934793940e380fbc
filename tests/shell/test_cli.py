"""The tessera command line: flags, scripts and their `arg`, exit codes.

Run: TESSERA_BIN=build/tessera python3 -m unittest discover -s tests/shell
"""
import os
import resource
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest

BIN = os.environ.get("TESSERA_BIN", "tessera")


def run(*args, stdin=None, env=None, timeout=60, cwd=None):
    full_env = dict(os.environ, TESSERA_HISTORY="", NO_COLOR="1")
    full_env.update(env or {})
    binary = BIN if cwd is None or os.sep not in BIN else os.path.abspath(BIN)
    return subprocess.run([binary, *args], input=stdin, capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=cwd)


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_start_up_leaves_the_operator_registrations_for_the_first_call(self):
        loaded = "print(require('tessera.internal').registry_loaded())"
        r = run("-e", loaded)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "false"), r.stderr)
        r = run("-e", "local a = mx.nd.ones({2}) + 1; a:wait_to_read(); " + loaded)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "true"), r.stderr)

    def test_openmp_waits_passively_by_default(self):
        # libgomp must see the default before its constructor runs.
        r = run("-e", "print(os.getenv('OMP_WAIT_POLICY'))", env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        inits = [line for line in r.stderr.splitlines() if "calling init:" in line]
        if not any("omp_wait_policy" in line for line in inits):
            # oneDNN and OpenBLAS still load libgomp there.
            self.skipTest("built without OpenMP (thread-sanitizer build)")
        self.assertEqual(r.stdout.strip(), "PASSIVE")
        ours = next(i for i, line in enumerate(inits) if "omp_wait_policy" in line)
        gomp = next(i for i, line in enumerate(inits) if "libgomp" in line)
        self.assertLess(ours, gomp, "\n".join(inits))
        r = run("-e", "print(os.getenv('OMP_WAIT_POLICY'))", env={"OMP_WAIT_POLICY": "active"})
        self.assertEqual(r.stdout.strip(), "active")

    def test_openblas_loads_on_first_use(self):
        # Loading OpenBLAS binds about 12,000 symbols: not at start-up.
        if os.environ.get("TESSERA_SANITIZE") == "address":
            self.skipTest("an address-sanitizer build links OpenBLAS and oneDNN (cmake/blas.cmake)")
        code = ("local function loaded() return io.open('/proc/self/maps'):read('*a')"
                ":find('libopenblas', 1, true) ~= nil end "
                "print(loaded()) local a = mx.nd.ones({8, 8}) "
                "print(mx.nd.dot(a, a):sum():asscalar()) print(loaded())")
        r = run("-e", code, env={"TESSERA_GEMM": "openblas"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["false", "512", "true"])

    def test_conv_algo_environment(self):
        # Every forced algorithm gives the convolution's values; a malformed
        # value is an error naming the variable, at every call, and the
        # script carries on.
        code = ("local x = mx.nd.ones({2, 8, 3, 3}) local w = mx.nd.ones({4, 8, 3, 3}) "
                "local ok, e = pcall(function() return mx.nd.Convolution(x, w, "
                "{kernel = {3, 3}, num_filter = 4, pad = {1, 1}, no_bias = true})"
                ":sum():asscalar() end) print(ok, e)")
        for algo in ("onednn", "gemm", "reference", "auto"):
            r = run("-e", code, env={"TESSERA_CONV_ALGO": algo})
            self.assertEqual(r.returncode, 0, r.stderr)
            # 4 filters over 2 images of 3x3: corners see 4 taps, edges 6,
            # the centre 9, each of 8 channels.
            self.assertEqual(r.stdout.split(), ["true", str(2 * 4 * 8 * (4 * 4 + 4 * 6 + 9))])
        r = run("-e", code + " " + code, env={"TESSERA_CONV_ALGO": "fastest"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("TESSERA_CONV_ALGO='fastest' is not auto, onednn, gemm or "
                                        "reference"), 2, r.stdout)

    def test_run_ahead_bound_environment(self):
        # Each variable sets its own bound; a negative one is an error that
        # names the variables.
        code = "print(mx.engine.max_inflight())"
        r = run("-e", code, env={"TESSERA_ENGINE_MAX_INFLIGHT": "9",
                                 "TESSERA_ENGINE_MAX_INFLIGHT_BYTES": "4096",
                                 "TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES": "8192"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["9", "4096", "8192"])
        r = run("-e", code, env={"TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES": "-1"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES must be >= 0", r.stderr)

    def test_onednn_loads_on_first_use(self):
        # Loading oneDNN binds its symbols and its OpenCL loader: not at start-up.
        if os.environ.get("TESSERA_SANITIZE") == "thread":
            self.skipTest("a thread-sanitizer build opens oneDNN at start-up (dnnl_lazy.cc)")
        if os.environ.get("TESSERA_SANITIZE") == "address":
            self.skipTest("an address-sanitizer build links OpenBLAS and oneDNN (cmake/blas.cmake)")
        code = ("local function loaded() return io.open('/proc/self/maps'):read('*a')"
                ":find('libdnnl', 1, true) ~= nil end "
                "print(loaded()) local x = mx.nd.ones({1, 1, 4, 4}) "
                "print(mx.nd.Pooling(x, {kernel = {2, 2}}):sum():asscalar()) print(loaded())")
        r = run("-e", code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["false", "9", "true"])

    def test_image_codecs_load_on_first_use(self):
        code = ("local function loaded() local m = io.open('/proc/self/maps'):read('*a') "
                "return m:find('libturbojpeg', 1, true) ~= nil, m:find('libpng', 1, true) ~= nil end "
                "print(loaded()) local img = mx.nd.ones({2, 2, 3}, {dtype = 'uint8'}) "
                "print(mx.image.imdecode(mx.image.imencode(img, {img_fmt = '.png'})):sum():asscalar()) "
                "print(loaded())")
        r = run("-e", code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["false", "false", "12", "true", "true"])

    def test_without_onednn_the_plain_kernels_give_the_same_values(self):
        # Every kernel oneDNN serves, float32, with oneDNN and without it.
        code = textwrap.dedent("""
            mx.random.seed(3)
            local x = mx.nd.random.uniform(-1, 1, {2, 3, 9, 9})
            local w = mx.nd.random.uniform(-1, 1, {4, 3, 3, 3})
            local m = mx.nd.random.uniform(-1, 1, {64, 64})
            local outs = {
              mx.nd.Convolution({x, w}, {kernel = {3, 3}, num_filter = 4, no_bias = true}),
              mx.nd.Pooling(x, {kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}}),
              mx.nd.Pooling(x, {kernel = {2, 2}, stride = {2, 2}, pool_type = 'avg'}),
              mx.nd.softmax(m), mx.nd.LRN(x, {nsize = 3}), mx.nd.dot(m, m)}
            x:attach_grad()
            local y = mx.autograd.record(function()
              return mx.nd.Pooling(x, {kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}}) end)
            y:backward(mx.nd.ones(y.shape))
            outs[#outs + 1] = x.grad
            for _, o in ipairs(outs) do
              for _, v in ipairs(o:reshape({-1}):totable()) do io.write(string.format('%.4f ', v)) end
            end
        """)
        with_dnnl = run("-e", code)
        self.assertEqual(with_dnnl.returncode, 0, with_dnnl.stderr)
        without = run("-e", code, env={"TESSERA_DNNL_LIBRARY": "/nonexistent/libdnnl.so.2"})
        self.assertEqual(without.returncode, 0, without.stderr)
        self.assertEqual(without.stderr.count("cannot load oneDNN"), 1, without.stderr)
        a = [float(v) for v in with_dnnl.stdout.split()]
        b = [float(v) for v in without.stdout.split()]
        self.assertEqual(len(a), len(b))
        self.assertGreater(len(a), 1000)
        for i, (u, v) in enumerate(zip(a, b)):
            self.assertAlmostEqual(u, v, delta=2e-4, msg=f"value {i}")

    def test_libraries_are_not_looked_up_in_the_current_folder(self):
        # A file named like a library the shell needs, in the folder it is run
        # from, is neither loaded nor an error (no empty RUNPATH entry).
        for name in ("libgomp.so.1", "libluajit-5.1.so.2", "libstdc++.so.6", "libz.so.1",
                     "libtessera.so", "libtessera_omp_wait_policy.so"):
            with open(os.path.join(self.dir.name, name), "w") as f:
                f.write("not a library\n")
        r = run("-e", "print(mx.nd.ones({3}):sum():asscalar())", cwd=self.dir.name)
        self.assertEqual((r.returncode, r.stdout), (0, "3\n"), r.stderr)

    def test_version_and_help(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^tessera \d+\.\d+\.\d+, LuaJIT ")
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: tessera", r.stdout)

    def test_unknown_flag_prints_usage_and_exits_2(self):
        r = run("--frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option '--frobnicate'", r.stderr)
        self.assertIn("usage: tessera", r.stderr)
        self.assertEqual(run("--engine", "quantum").returncode, 2)
        self.assertEqual(run("-e").returncode, 2)

    def test_execute(self):
        r = run("-e", "print(1 + 2)", "-e", "print(tostring(mx.cpu()))")
        self.assertEqual((r.returncode, r.stdout), (0, "3\ncpu(0)\n"))

    def test_script_arguments_as_lua(self):
        script = self.write("s.lua", """\
            #!/usr/bin/env tessera
            print(arg[0], arg[1], arg[2], #arg, ...)
            print(arg[-1] ~= nil)
            """)
        r = run(script, "a", "b")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"{script}\ta\tb\t2\ta\tb\ntrue\n")

    def test_require_flag(self):
        self.write("mymod.lua", "return {answer = 42}\n")
        r = run("-l", "mymod", "-e", "print(mymod.answer)",
                env={"LUA_PATH": os.path.join(self.dir.name, "?.lua") + ";;"})
        self.assertEqual((r.returncode, r.stdout), (0, "42\n"), r.stderr)
        self.assertEqual(run("-l", "no_such_module_x").returncode, 1)

    def test_stdin_is_a_script(self):
        r = run(stdin="print(require('tessera') == mx)\n")
        self.assertEqual((r.returncode, r.stdout), (0, "true\n"), r.stderr)
        r = run("-", "x", stdin="print(arg[0], arg[1], ...)\n")
        self.assertEqual(r.stdout, "-\tx\tx\n")

    def test_errors_exit_1_with_a_traceback(self):
        r = run("-e", "local function f() error('kaput') end f()")
        self.assertEqual(r.returncode, 1)
        self.assertIn("kaput", r.stderr)
        self.assertIn("stack traceback", r.stderr)
        r = run("-e", "x = = 1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("unexpected symbol", r.stderr)
        r = run(os.path.join(self.dir.name, "missing.lua"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot open", r.stderr)

    def test_async_error_at_exit_names_the_op(self):
        r = run("-e", "local v = mx.engine.new_var() "
                      "mx.engine.push(function() error('late') end, {write = {v}, name = 'late_op'})")
        self.assertEqual(r.returncode, 1)
        self.assertIn("late_op", r.stderr)
        self.assertIn("late", r.stderr)

    def test_pushed_work_finishes_before_exit(self):
        r = run("-e", "mx.engine.push(function() print('ran') end)")
        self.assertEqual((r.returncode, r.stdout), (0, "ran\n"), r.stderr)

    def test_engine_flag(self):
        for kind in ("naive", "threaded"):
            r = run("--engine", kind, "-e", "print(mx.engine.type())")
            self.assertEqual(r.stdout, kind + "\n")
        r = run("--engine", "naive", "-e",
                "local ran = false mx.engine.push(function() ran = true end) print(ran)")
        self.assertEqual(r.stdout, "true\n")

    def test_test_runner(self):
        self.write("t/a_test.lua", """\
            test('passes', function() assert_eq(1 + 1, 2) end)
            test('fails', function() assert_eq({1}, {2}, 'lists') end)
            """)
        self.write("t/sub/b_test.lua", """\
            return {
              one = function() end,
              async_failure = function()
                mx.engine.push(function() error('async kaboom') end, {name = 'async_op'})
              end,
            }
            """)
        r = run("--test", os.path.join(self.dir.name, "t"))
        self.assertEqual(r.returncode, 1)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(lines[-1], "2 passed, 2 failed")
        self.assertIn("FAIL", r.stdout)
        self.assertIn("lists: expected {2}, got {1}", r.stdout)
        self.assertIn("async_op", r.stdout)
        self.assertIn("stack traceback", r.stdout)
        self.write("ok/c_test.lua", "test('fine', function() end)\n")
        r = run("--test", os.path.join(self.dir.name, "ok"))
        self.assertEqual((r.returncode, r.stdout.strip().splitlines()[-1]), (0, "1 passed, 0 failed"))
        self.assertEqual(run("--test", os.path.join(self.dir.name, "nothing")).returncode, 1)

    def test_a_test_run_that_finds_no_test_fails(self):
        # A file or a directory whose files declare no test: nothing passed.
        empty = self.write("empty/helpers.lua", "local x = 1\nreturn {answer = 42}\n")
        for path in (empty, os.path.dirname(empty)):
            r = run("--test", path)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("0 passed, 0 failed", r.stdout)
            self.assertIn("no tests found under " + path, r.stdout)
        os.makedirs(os.path.join(self.dir.name, "bare"))
        r = run("--test", os.path.join(self.dir.name, "bare"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no test files", r.stdout)

    @unittest.skipIf(os.environ.get("TESSERA_SANITIZE"),
                     "sanitizers reserve more address space than the limit allows")
    def test_out_of_host_memory_is_a_clear_error(self):
        # Under a 1.2 GB address-space limit, a 400 MB array fits but its
        # values as doubles (800 MB more) do not: the failed allocation is an
        # error naming the function, and the shell carries on.
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))
        code = ("local a = mx.nd.ones({100000000}); a:wait_to_read(); "
                "local ok, err = pcall(function() local t = a:totable(); return t end); "
                "print(ok, err); a = nil; collectgarbage(); "
                "print((mx.nd.ones({2}) + 1):totable()[1])")
        r = subprocess.run([BIN, "-e", code], capture_output=True, text=True, timeout=120,
                           preexec_fn=limit,
                           env=dict(os.environ, TESSERA_HISTORY="", OMP_NUM_THREADS="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("false\ttotable: out of memory: a host allocation failed", r.stdout)
        self.assertNotIn("bad_alloc", r.stdout)
        self.assertTrue(r.stdout.endswith("\n2\n"), r.stdout)

    def test_a_save_killed_by_sigterm_leaves_no_temporary(self):
        # Saves of a big array in a loop, one of them interrupted while it
        # writes: the process dies of the signal and no <target>.tmp.* stays
        # beside the target.
        target = os.path.join(self.dir.name, "big.params")
        with open(target, "w") as f:
            f.write("old")
        proc = subprocess.Popen(
            [BIN, "-e", "local a = mx.nd.ones({16, 1024, 1024}); a:wait_to_read(); "
                        "io.stdout:write('ready\\n'); io.stdout:flush(); "
                        "while true do mx.nd.save(%r, {a = a}) end" % target],
            stdout=subprocess.PIPE, env=dict(os.environ, TESSERA_HISTORY=""))
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        deadline = time.monotonic() + 30
        while not any(".tmp." in n for n in os.listdir(self.dir.name)):
            self.assertLess(time.monotonic(), deadline, "no save started")
            time.sleep(0.001)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), -signal.SIGTERM)
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["big.params"])


if __name__ == "__main__":
    unittest.main()
