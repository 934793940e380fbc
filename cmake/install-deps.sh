#!/usr/bin/env bash
# Makes sure the Debian packages the build needs are installed. As root it
# installs what is missing; otherwise it prints the apt-get line to run.
# Cheap when everything is present: one dpkg-query call.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config git
  doctest-dev            # C++ unit tests
  nlohmann-json3-dev     # profiler traces, symbol files
  libtbb-dev             # oneTBB flow graph, the peer in the engine benchmarks
  libopenblas-dev        # CPU GEMM
  libdnnl-dev            # CPU GEMM and neural-network primitives (oneDNN)
  libluajit-5.1-dev luajit  # the embedded interpreter; luajit is the start-up peer
  libedit-dev            # REPL line editing
  zlib1g-dev             # gzip'd datasets
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev  # image decoding and encoding (mx.image, RecordIO images)
  libopencv-imgproc-dev  # image resizing (cv::resize, as MXNet's mx.image)
  libopenmpi-dev openmpi-bin  # the stores across processes (mx.kv dist_sync) and their launcher
  graphviz               # mx.viz.plot_network draws graphs with its dot program
  gnuplot-nox            # mx.plot and the training curves of fit{plot = ...}
  clang libclang-rt-14-dev  # the libFuzzer harnesses (tests/fuzz): clang and its fuzzer runtime
)

# `--bench`: also the peers and data that `make bench` measures against.
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(
    python3-torch python3-torchvision  # PyTorch and its DataLoader, the peers
    python3-skimage                    # sample photographs for the image-loading benchmark
  )
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  echo "tessera: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "tessera: these Debian packages are missing: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
