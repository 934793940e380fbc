#!/usr/bin/env bash
# The GPU suite, run from a bundle made by pack.sh (make gpu-bundle) on a
# machine with an NVIDIA GPU: the C++ test suites (their GPU cases run where
# a device is found: the CPU/GPU consistency sweep of every op with a GPU
# kernel, the engine's GPU lanes, the device pool, copies), the Lua tests,
# then the GPU benchmarks. Prints each result and `N passed, N failed`.
# Without a usable GPU it says so and stops (exit 0).
#
# usage: run.sh [LOG_DIR]     (each test's whole output is kept there)
#   GPU_SUITE_JOBS=n  test executables run at once (default: cores / 2)
#   GPU_SUITE_FORCE=1 run the suite without a GPU too (to try the bundle)
#   GPU_SUITE_TIMEOUT=s  seconds each suite may run (default 600)
set -u
here=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$here/logs}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The machine's CUDA libraries (cuBLAS, cuDNN, NVRTC): the toolkit's, then
# those of Python's nvidia-* packages, where PyTorch keeps its own.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH+=":$d"
done
nv=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)
if [ -n "$nv" ]; then
  for d in $(find "$nv" -maxdepth 3 -type d -name lib 2>/dev/null); do LD_LIBRARY_PATH+=":$d"; done
fi
export TESSERA_DNNL_LIBRARY="$here/lib/libdnnl.so.2"
# LuaJIT's jit.* modules from the bundle, then Lua's default path (;;).
export LUA_PATH="$here/share/lua/?.lua;${LUA_PATH:-;}"
tessera="$here/bin/tessera"

# The source path the tests were built with, linked to src/ if it is free.
srcdir=$(cat "$here/SOURCE_DIR" 2>/dev/null)
if [ -n "$srcdir" ] && [ ! -e "$srcdir" ]; then
  mkdir -p "$(dirname "$srcdir")" 2>/dev/null && ln -s "$here/src" "$srcdir" 2>/dev/null &&
    echo "gpu suite: $srcdir -> $here/src (fixtures and test plugins)"
fi
builddir=$(cat "$here/BUILD_DIR" 2>/dev/null)
if [ -n "$builddir" ] && [ ! -e "$builddir" ] && [ -d "$here/src/${builddir#"$srcdir"/}" ]; then
  mkdir -p "$(dirname "$builddir")" 2>/dev/null &&
    ln -s "$here/src/${builddir#"$srcdir"/}" "$builddir" 2>/dev/null &&
    echo "gpu suite: $builddir -> $here/src/${builddir#"$srcdir"/} (test plugins)"
fi
# C++ tests run where CTest runs them: the build's tests folder.
testdir=$here
[ -n "$builddir" ] && [ -d "$builddir/tests" ] && testdir=$builddir/tests
# Lua test files that need a program this machine lacks are left out, saying so.
skip=""
command -v dot >/dev/null || skip+="viz_test.lua,plot_test.lua,"
command -v gnuplot >/dev/null || skip+="plot_test.lua,estimator_test.lua,"
if [ -n "$skip" ]; then
  export TESSERA_TEST_SKIP="$skip"
  echo "gpu suite: no Graphviz or gnuplot here: leaving out ${skip%,}"
fi

echo "gpu suite: bundle of $(cat "$here/COMMIT"), $(uname -m), $(nproc) cores"
for d in ${LD_LIBRARY_PATH//:/ }; do
  if [ -e "$d/libcublas.so.13" ]; then echo "gpu suite: cuBLAS from $d"; break; fi
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
  echo "gpu suite: nvidia-smi found no driver"
gpus=$("$tessera" -e 'io.write(mx.context.num_gpus())' 2>"$logs/start.err") || {
  echo "gpu suite: tessera does not start here:"
  cat "$logs/start.err"
  exit 1
}
if [ "$gpus" = 0 ] && [ -z "${GPU_SUITE_FORCE:-}" ]; then
  echo "gpu suite: tessera starts but finds no GPU; nothing to run"
  exit 0
fi
echo "gpu suite: tessera sees $gpus GPU(s)"

# One line per suite: name, result, seconds. The MPI jobs (collectives_test)
# need mpirun and are left to the CPU machine.
run_one() {
  local name=$1
  shift
  local t0=$SECONDS
  if timeout "${GPU_SUITE_TIMEOUT:-600}" "$@" >"$logs/$name.log" 2>&1; then
    echo "PASS $name $((SECONDS - t0))s"
  else
    echo "FAIL $name $((SECONDS - t0))s (exit $?; $logs/$name.log)"
  fi
}
export -f run_one
export logs GPU_SUITE_TIMEOUT
jobs=${GPU_SUITE_JOBS:-$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))}
{
  for t in "$here"/bin/*_test; do
    case $(basename "$t") in collectives_test) continue ;; esac
    echo "$(basename "$t") $t"
  done
} | (cd "$testdir" && xargs -P "$jobs" -L 1 bash -c 'run_one "$@"' _) >"$logs/results.txt"
(cd "$here/src" && run_one lua_tests "$tessera" --test tests/lua) >>"$logs/results.txt"
# The example C++ plugin, whose ops have no GPU kernel: an error on the GPU.
example_ops=$(find "$here/src" -name libtessera_example_ops.so 2>/dev/null | head -1)
if [ -n "$example_ops" ]; then
  (cd "$here/src" && TESSERA_EXAMPLE_OPS=$example_ops run_one plugin_lua_tests "$tessera" --test \
    tests/plugin/example_ops_test.lua) >>"$logs/results.txt"
fi
sort "$logs/results.txt"
for name in $(grep '^FAIL' "$logs/results.txt" | awk '{print $2}'); do
  echo "---- $name (last 40 lines)"
  tail -n 40 "$logs/$name.log"
done
# The consistency sweep's own summary, whatever its result.
grep -h "consistency:" "$logs/gpu_consistency_test.log" 2>/dev/null | sed 's/^.*MESSAGE: //'
grep -h "passed, .* failed" "$logs/lua_tests.log" 2>/dev/null | tail -1

echo "---- benchmarks"
for b in "$here"/bin/gpu_*_bench; do
  [ -x "$b" ] && timeout "${GPU_SUITE_TIMEOUT:-600}" "$b" 2>&1 | tee "$logs/$(basename "$b").log"
done
# Training steps against PyTorch eager on the same GPU (where python3 has it).
(cd "$here/src" && timeout "${GPU_SUITE_TIMEOUT:-600}" bash scripts/bench/gpu_train_vs_torch.sh \
  "$tessera" python3 2>&1 | tee "$logs/gpu_train_vs_torch.log")
# The fused RNN op's LSTM against PyTorch's (cuDNN) on the same GPU.
(cd "$here/src" && timeout "${GPU_SUITE_TIMEOUT:-600}" bash scripts/bench/gpu_lstm_vs_torch.sh \
  "$tessera" python3 2>&1 | tee "$logs/gpu_lstm_vs_torch.log")
# The 3x3 convolution from a script against PyTorch's (cuDNN) on the same GPU.
(cd "$here/src" && timeout "${GPU_SUITE_TIMEOUT:-600}" bash scripts/bench/gpu_conv_vs_torch.sh \
  "$tessera" python3 2>&1 | tee "$logs/gpu_conv_vs_torch.log")
# The same steps with every GPU op waiting for its stream, as before ops
# completed on events (docs/engine.md): what completion on events gains.
(cd "$here/src" && TESSERA_GPU_SYNC_EACH_OP=1 timeout "${GPU_SUITE_TIMEOUT:-600}" \
  "$tessera" scripts/bench/gpu_train_step.lua 2>&1 |
  sed -e 's/^tessera_/sync_each_op_/' -e 's/^gpu_/sync_each_op_gpu_/' | tee "$logs/gpu_train_sync_each_op.log")
# And with one compute worker (one stream) per GPU instead of two.
(cd "$here/src" && TESSERA_GPU_WORKER_NTHREADS=1 timeout "${GPU_SUITE_TIMEOUT:-600}" \
  "$tessera" scripts/bench/gpu_train_step.lua 2>&1 |
  sed -e 's/^tessera_/one_worker_/' -e 's/^gpu_/one_worker_gpu_/' | tee "$logs/gpu_train_one_worker.log")
pass=$(grep -c '^PASS' "$logs/results.txt")
fail=$(grep -c '^FAIL' "$logs/results.txt")
echo "gpu suite: $pass passed, $fail failed"
[ "$fail" = 0 ]
