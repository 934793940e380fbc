#!/usr/bin/env python3
"""The stores across processes, as jobs of 2 and 3 workers (tessera --launch).

usage: run_dist_tests.py TESSERA_BINARY [COLLECTIVES_TEST_BINARY]

kv_dist_test.lua runs on every worker of a job (both engines); the fault
scripts check that a worker that dies, raises or diverges stops the job with
an error naming a rank, within a bounded time, instead of hanging it.
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []


def run(cmd, env_extra=None, limit=120):
    env = dict(os.environ, **(env_extra or {}))
    # A ThreadSanitizer build: Open MPI's own lock order is not ours to check.
    env.setdefault("TSAN_OPTIONS", "suppressions=" + os.path.join(HERE, "tsan_mpi.supp"))
    # An AddressSanitizer build: Open MPI keeps allocations past MPI_Finalize,
    # many from components it has unloaded (so no suppression can name
    # them); leak checking is off for processes that start MPI, the other
    # checks stay on.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           timeout=limit, text=True)
        return p.returncode, p.stdout, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, time.monotonic() - start


def check(name, ok, output):
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        FAILURES.append(name)
        print(output)


def suite(tessera, workers, engine):
    rc, out, secs = run([tessera, "--launch", str(workers), "--engine", engine, "--test",
                         os.path.join(HERE, "kv_dist_test.lua")])
    totals = re.findall(r"^(\d+) passed, (\d+) failed$", out, re.M)
    ok = rc == 0 and len(totals) == workers and all(f == "0" and p != "0" for p, f in totals)
    check(f"kv_dist_test.lua on {workers} workers, {engine} engine ({secs:.1f} s)", ok, out)


def cpp_suite(binary, workers):
    cmd = ["mpirun", "-np", str(workers), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    rc, out, secs = run(cmd + [binary])
    check(f"{os.path.basename(binary)} on {workers} processes ({secs:.1f} s)", rc == 0, out)


def fault(tessera, script, patterns, limit):
    rc, out, secs = run([tessera, "--launch", "2", os.path.join(HERE, "faults", script)],
                        {"TESSERA_KV_TIMEOUT": "3"}, limit=limit)
    ok = rc not in (0, None) and secs < limit and "was not stopped" not in out and all(
        re.search(p, out) for p in patterns)
    check(f"{script}: the job stops with the named error (rc {rc}, {secs:.1f} s)", ok, out)


def main():
    tessera = sys.argv[1]
    suite(tessera, 2, "threaded")
    suite(tessera, 3, "threaded")
    suite(tessera, 2, "naive")
    if len(sys.argv) > 2:
        cpp_suite(sys.argv[2], 2)
        cpp_suite(sys.argv[2], 3)
    fault(tessera, "killed.lua", [r"rank 1 .*signal 9"], 60)
    fault(tessera, "raises.lua", [r"worker 1 gave up", r"rank 1 of 2 failed: stopping the job"], 60)
    fault(tessera, "diverges.lua",
          [r"rank 0 of 2 waited 3 s in allreduce #\d+ \(push of key 0\)",
           r"rank 0 of 2 failed: stopping the job"], 60)
    rc, out, _ = run([tessera, "--launch", "0", "x.lua"])
    check("--launch 0 is a usage error", rc == 2 and "--launch needs a number" in out, out)
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
