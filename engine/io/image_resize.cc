#include "engine/io/image_resize.h"

#include <dlfcn.h>

#include <string>

#include "engine/base/error.h"

namespace tessera::io {
namespace {

using ResizeFn = int (*)(const uint8_t*, int, int, int, size_t, uint8_t*, int, int, int, char*,
                         size_t);

// The build's library (TESSERA_IMGPROC_LIBRARY), else the one beside the
// installed runtime (found through the executable's run path).
ResizeFn LoadResize() {
  std::string tried;
  for (const char* path : {TESSERA_IMGPROC_LIBRARY, "libtessera_imgproc.so"}) {
    if (void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      auto fn = reinterpret_cast<ResizeFn>(dlsym(lib, "tessera_imgproc_resize_strided"));
      TS_CHECK(fn) << "imresize: " << path << " has no tessera_imgproc_resize_strided";
      return fn;
    }
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path);
  }
  TS_THROW << "imresize: cannot load the OpenCV resampler (install libopencv-imgproc406): "
           << tried;
}

// Loaded once (a failed load is tried again by the next call).
ResizeFn Resize() {
  static const ResizeFn fn = LoadResize();
  return fn;
}

}  // namespace

int AutoInterpolation(int64_t w, int64_t h, int64_t out_w, int64_t out_h) {
  if (out_w > w && out_h > h) return 2;  // bicubic to enlarge
  if (out_w < w && out_h < h) return 3;  // area to shrink
  return 1;
}

Image ResizeImage(const Image& src, int64_t out_width, int64_t out_height, int interp,
                  std::string_view what) {
  Image out;
  ResizeImageInto(src, out_width, out_height, interp, what, &out);
  return out;
}

void ResizeImageInto(const Image& src, int64_t out_width, int64_t out_height, int interp,
                     std::string_view what, Image* out) {
  ResizeWindowInto(src, {0, 0, src.width, src.height}, out_width, out_height, interp, what, out);
}

void ResizeWindowInto(const Image& src, const ImageRegion& r, int64_t out_width, int64_t out_height,
                      int interp, std::string_view what, Image* out_image) {
  TS_CHECK(src.channels == 1 || src.channels == 3)
      << what << ": images have 1 or 3 channels, got " << src.channels;
  TS_CHECK(r.height > 0 && r.width > 0)
      << what << ": the image is empty (" << r.width << "x" << r.height << ")";
  TS_CHECK(out_width > 0 && out_height > 0 && out_width <= 65535 && out_height <= 65535)
      << what << ": the size must be 1 to 65535 a side, got " << out_width << "x" << out_height;
  TS_CHECK(r.height <= 65535 && r.width <= 65535)
      << what << ": an image of " << r.width << "x" << r.height << " is too large to resize";
  TS_DCHECK(r.x >= 0 && r.y >= 0 && r.x + r.width <= src.width && r.y + r.height <= src.height);
  if (interp == 9) interp = AutoInterpolation(r.width, r.height, out_width, out_height);
  TS_CHECK(interp >= 0 && interp <= 4)
      << what << ": interp must be 0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area), 4 "
      << "(Lanczos) or 9 (automatic), got " << interp;
  TS_DCHECK(out_image != &src);
  Image& out = *out_image;
  out.height = out_height;
  out.width = out_width;
  out.channels = src.channels;
  out.pixels.resize(static_cast<size_t>(out_height * out_width * src.channels));
  const size_t step = static_cast<size_t>(src.width * src.channels);
  const uint8_t* first =
      src.pixels.data() + static_cast<size_t>(r.y) * step + static_cast<size_t>(r.x * src.channels);
  char error[256] = {};
  const int rc = Resize()(first, static_cast<int>(r.height), static_cast<int>(r.width),
                          static_cast<int>(src.channels), step, out.pixels.data(),
                          static_cast<int>(out_height), static_cast<int>(out_width), interp, error,
                          sizeof error);
  TS_CHECK(rc == 0) << what << ": OpenCV's resize failed: " << error;
}

}  // namespace tessera::io
