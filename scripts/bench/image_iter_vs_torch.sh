#!/usr/bin/env bash
# The image pipeline (issue: data at scale): ImageRecordIter against
#  (a) libjpeg-turbo decoding the same records on the same threads, the limit
#      (tests/bench/image_pipeline_bench, which also times the iterator in C++);
#  (b) PyTorch's DataLoader over the same JPEGs in a folder, the same
#      transforms, as many workers (image_loader_torch.py);
# and the iterator from Lua as a training script sees it (image_loader.lua).
# The data: 2000 JPEGs of about 500x375 cut from Debian's scikit-image sample
# photos (make_image_folder.py), packed byte for byte (im2rec --pass-through).
#   scripts/bench/image_iter_vs_torch.sh [path/to/tessera] [threads=2]
set -euo pipefail
tessera=${1:-build/tessera}
threads=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$(dirname "$tessera")" && pwd)
tessera=$build/$(basename "$tessera")
data=${TESSERA_IMAGE_BENCH_DATA:-$build/bench-data/images}
if [ ! -f "$data/data.idx" ]; then
  rm -rf "$data" && mkdir -p "$data"
  if ! /usr/bin/python3 "$here/make_image_folder.py" "$data/folder" --count 2000; then
    echo "image_record_iter_lua_vs_limit: unavailable"
    exit 0
  fi
  (cd "$data" && "$tessera" "$here/../tools/im2rec.lua" --list --recursive --quiet data.tmp folder &&
    "$tessera" "$here/../tools/im2rec.lua" --pass-through --quiet data.tmp folder &&
    mv data.tmp.rec data.rec && mv data.tmp.idx data.idx)
fi
limit=$("$build/tests/image_pipeline_bench" "$data/data.rec" "$data/data.idx" "$threads" 3)
lua=$("$tessera" "$here/image_loader.lua" "$data/data.rec" "$data/data.idx" "$threads" 3)
lua_u8=$("$tessera" "$here/image_loader.lua" "$data/data.rec" "$data/data.idx" "$threads" 3 uint8)
torch=$(/usr/bin/python3 "$here/image_loader_torch.py" "$data/folder" "$threads" 3 ||
  echo "torch_dataloader_${threads}w: unavailable")
echo "$limit"
echo "$lua"
echo "$lua_u8"
echo "$torch"
value() { echo "$1" | sed -n "s/^$2: \([0-9.]*\) .*/\1/p"; }
l=$(value "$limit" "image_decode_limit_${threads}t")
a=$(value "$lua" "image_record_iter_lua_float32_${threads}t")
u=$(value "$lua_u8" "image_record_iter_lua_uint8_${threads}t")
t=$(value "$torch" "torch_dataloader_${threads}w")
awk -v l="$l" -v a="$a" -v u="$u" -v t="$t" 'BEGIN {
  printf "image_record_iter_lua_vs_limit: %.3f ratio\n", a / l
  printf "image_record_iter_lua_uint8_vs_limit: %.3f ratio\n", u / l
  if (t > 0) printf "image_record_iter_lua_vs_torch: %.2f x\n", a / t
  else print "image_record_iter_lua_vs_torch: unavailable" }'
