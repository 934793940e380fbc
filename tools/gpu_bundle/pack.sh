#!/usr/bin/env bash
# Packs a CUDA build into one folder, and a .tar.xz of it, that runs the GPU
# suite on a machine with an NVIDIA GPU and driver but none of the build's
# Debian packages:
#
#   bin/    tessera, the C++ test executables, the GPU benchmarks (stripped)
#   lib/    the build's shared libraries and every library they and the
#           libraries the runtime opens on first use (oneDNN, OpenBLAS,
#           libjpeg-turbo, libpng, libedit, OpenCV) need, found with ldd;
#           not the C library (the target's own serves), the driver or
#           the CUDA toolkit's libraries (the target's serve)
#   share/  LuaJIT's jit.* Lua modules (jit.vmdef), which mx.rtc reads
#   src/    the Lua tests with their fixtures, the scripts, the docs (whose
#           examples the tests run)
#   run.sh  runs it all (tools/gpu_bundle/run.sh)
#
# usage: pack.sh BUILD_DIR OUT_DIR     (writes OUT_DIR and OUT_DIR.tar.xz)
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
grep -q '^TESSERA_NVCC:FILEPATH=/' "$build/CMakeCache.txt" 2>/dev/null ||
  echo "pack.sh: note: $build has no CUDA; the bundle will say so where it runs" >&2

rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/bin" "$out/lib" "$out/src/tests" "$out/src/scripts"

# Executables: the shell, the doctest suites, the GPU benchmarks.
cp "$build/tessera" "$out/bin/"
for f in "$build"/tests/*_test "$build"/tests/gpu_*_bench; do
  if [ -x "$f" ]; then cp "$f" "$out/bin/"; fi
done
# The build's own libraries (the runtime, the resampler, the MPI shim, ...).
# Not the MPI shim: the MPI jobs need mpirun and stay on the CPU machine.
find "$build" -maxdepth 1 -name 'lib*.so*' ! -name 'libtessera_mpi.so' -exec cp -P {} "$out/lib/" \;

# Libraries the runtime opens by name on first use, found where this
# machine's loader finds them.
opened="libdnnl.so.2 libopenblas.so.0 libturbojpeg.so.0 libpng16.so.16 libjpeg.so.62 libedit.so.2"
for name in $opened; do
  path=$(ldconfig -p | awk -v n="$name" '$1 == n && /x86-64/ && !found++ {print $NF}')
  if [ -n "$path" ]; then cp -L "$path" "$out/lib/$name"; else echo "pack.sh: $name not found" >&2; fi
done

# The closure of what everything needs, except what every Linux has (the C
# library and its loader), the NVIDIA driver (it must match the kernel) and
# the CUDA libraries a GPU machine has (cuBLAS and cuBLASLt alone are some
# 600 MB; run.sh puts the machine's on the library path).
skip='^(libc|libm|libdl|libpthread|librt|libutil|ld-linux-x86-64|linux-vdso|libcuda|libnvidia-[a-z]*'
skip+='|libcublas|libcublasLt|libcusolver[a-zA-Z]*|libcudnn[a-z_]*|libnccl|libnvrtc[a-z-]*|libcurand)\.'
for round in 1 2 3; do
  for f in "$out"/bin/* "$out"/lib/*; do
    LD_LIBRARY_PATH="$out/lib:$build" ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    if [[ ! $name =~ $skip && ! -e $out/lib/$name ]]; then cp -L "$path" "$out/lib/$name"; fi
  done
done
strip --strip-debug "$out"/bin/* "$out"/lib/* 2>/dev/null || true
# LuaJIT's own Lua modules (jit.vmdef, jit.util's companions), which mx.rtc's
# translation of Lua functions reads; Debian keeps them beside the library
# (libluajit-5.1-common), and run.sh puts them on LUA_PATH.
vmdef=$(dpkg -L libluajit-5.1-common 2>/dev/null | grep '/jit/vmdef\.lua$' | head -1)
if [ -n "$vmdef" ]; then
  mkdir -p "$out/share/lua" && cp -r "$(dirname "$vmdef")" "$out/share/lua/"
else
  echo "pack.sh: LuaJIT's jit/vmdef.lua not found; mx.rtc's Lua functions will fail there" >&2
fi

# What the tests and benchmarks read from the source tree.
cp -r "$src/tests/lua" "$src/tests/data" "$out/src/tests/"
mkdir -p "$out/src/tests/plugin" && cp "$src"/tests/plugin/*.lua "$out/src/tests/plugin/"
cp -r "$src/scripts/." "$out/src/scripts/"
cp -r "$src/docs" "$out/src/"
# Tests open fixtures (through __FILE__) and the test plugins by the absolute
# paths of the source and build trees (or, built through ccache with a base
# directory, by paths relative to build/tests, where CTest runs them); run.sh
# links the source path to src/ where it does not exist, or else the build
# path alone (a machine holding the sources without the build), so a build
# inside its source tree finds both.
echo "$src" >"$out/SOURCE_DIR"
echo "$build" >"$out/BUILD_DIR"
case "$build" in
  "$src"/*)
    plugins="$out/src/${build#"$src"/}/tests/plugin"
    mkdir -p "$plugins"
    cp "$build"/tests/plugin/*.so "$plugins/" 2>/dev/null || true
    strip --strip-debug "$plugins"/*.so 2>/dev/null || true
    ;;
esac
cp "$src/tools/gpu_bundle/run.sh" "$out/run.sh"
git -C "$src" rev-parse --short HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

XZ_OPT=-T0 tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
echo "gpu bundle: $out ($(du -sh "$out" | cut -f1)), $out.tar.xz ($(du -sh "$out.tar.xz" | cut -f1))"
