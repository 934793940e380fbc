#include "engine/io/image_transcode.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "engine/base/cores.h"
#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/io/image_resize.h"

namespace tessera::io {
namespace {

std::string ReadFile(const std::string& path, std::string_view what) {
  CheckRegularFile(path, what);
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in) << what << ": cannot open " << path;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TS_CHECK(!in.bad()) << what << ": cannot read " << path;
  return bytes;
}

}  // namespace

std::string TranscodeImage(std::string_view bytes, const TranscodeOptions& o,
                           std::string_view what) {
  if (o.pass_through) return std::string(bytes);
  Image im = DecodeImage(bytes, o.channels, what);
  if (o.center_crop && im.width != im.height) {
    const int64_t s = std::min(im.width, im.height);
    im = CropImage(im, {(im.width - s) / 2, (im.height - s) / 2, s, s});
  }
  if (o.resize > 0) {
    int64_t w = o.resize, h = o.resize;  // as mx.image.resize_short
    if (im.height > im.width)
      h = o.resize * im.height / im.width;
    else
      w = o.resize * im.width / im.height;
    w = std::max<int64_t>(w, 1);
    h = std::max<int64_t>(h, 1);
    im = ResizeImage(im, w, h, AutoInterpolation(im.width, im.height, w, h), what);
  }
  return EncodeImage(im, o.format, o.quality, what);
}

std::vector<std::string> TranscodeFiles(const std::vector<std::string>& paths,
                                        const TranscodeOptions& o, int threads,
                                        std::string_view what) {
  if (threads <= 0) threads = UsableCores();
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), paths.size()));
  std::vector<std::string> out(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::exception_ptr first;
  size_t first_at = paths.size();
  const auto work = [&] {
    for (size_t i; !failed.load() && (i = next.fetch_add(1)) < paths.size();) {
      try {
        out[i] = TranscodeImage(ReadFile(paths[i], what), o, std::string(what) + ": " + paths[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < first_at) {  // the earliest in list order, whatever the thread
          first_at = i;
          first = std::current_exception();
        }
        failed.store(true);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (first) std::rethrow_exception(first);
  return out;
}

}  // namespace tessera::io
