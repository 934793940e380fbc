#include "engine/io/image_codec.h"

#include <dlfcn.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "engine/base/error.h"
#include "engine/base/shared_library.h"
#include "engine/io/jpeg_region.h"

namespace tessera::io {
namespace {

// ---- the libraries, opened on first use ----
// libjpeg-turbo and libpng are opened by the first image call, not with the
// program (start-up binds neither); the headers give the functions' types.

#define TS_TURBOJPEG_FUNCTIONS(X)           \
  X(init_decompress, tjInitDecompress)      \
  X(init_compress, tjInitCompress)          \
  X(decompress_header, tjDecompressHeader3) \
  X(decompress, tjDecompress2)              \
  X(compress, tjCompress2)                  \
  X(error_str, tjGetErrorStr2)              \
  X(destroy, tjDestroy)                     \
  X(free, tjFree)

#define TS_PNG_FUNCTIONS(X)                           \
  X(png_begin_read, png_image_begin_read_from_memory) \
  X(png_finish_read, png_image_finish_read)           \
  X(png_free, png_image_free)                         \
  X(png_write, png_image_write_to_memory)

struct TurboJpeg {
  TS_LIBRARY_FUNCTIONS(TS_TURBOJPEG_FUNCTIONS)
};

struct Png {
  TS_LIBRARY_FUNCTIONS(TS_PNG_FUNCTIONS)
};

// Both, opened together by the first image call.
struct Codecs : TurboJpeg, Png {};

void* OpenLibrary(const char* const* names, const char* package) {
  std::string tried;
  for (const char* const* n = names; *n; ++n) {
    if (void* lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : *n);
  }
  TS_THROW << "images: cannot load " << names[0] << " (install " << package << "): " << tried;
}

Codecs LoadCodecs() {
  static const char* const kJpeg[] = {TESSERA_TURBOJPEG_LIBRARY, "libturbojpeg.so.0", nullptr};
  static const char* const kPng[] = {TESSERA_PNG_LIBRARY, "libpng16.so.16", nullptr};
  void* tj = OpenLibrary(kJpeg, "libturbojpeg0");
  void* png = OpenLibrary(kPng, "libpng16-16");
  Codecs c;
  c.TurboJpeg::Bind(tj, "images: the library loaded");
  c.Png::Bind(png, "images: the library loaded");
  return c;
}

// Loaded once (a failed load is tried again by the next call).
const Codecs& Lib() {
  static const Codecs c = LoadCodecs();
  return c;
}

constexpr unsigned char kJpegSignature[] = {0xff, 0xd8, 0xff};
constexpr unsigned char kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

std::string FirstBytes(std::string_view b) {
  std::ostringstream s;
  s << std::hex;
  for (size_t i = 0; i < b.size() && i < 4; ++i)
    s << (i ? " " : "") << unsigned(static_cast<unsigned char>(b[i]));
  return s.str();
}

void CheckSize(int64_t h, int64_t w, std::string_view what, const char* fmt) {
  TS_CHECK(h > 0 && w > 0) << what << ": the " << fmt << " image has no pixels (" << w << "x" << h
                           << ")";
  TS_CHECK(h * w <= kMaxImagePixels) << what << ": the " << fmt << " image is " << w << "x" << h
                                     << ", more than the " << kMaxImagePixels << " pixels allowed";
}

// ---- JPEG ----

struct TjHandle {
  tjhandle h;
  explicit TjHandle(tjhandle handle) : h(handle) {}
  ~TjHandle() {
    if (h) Lib().destroy(h);
  }
};

// One decoder per thread, kept between images: a data pipeline's workers
// decode thousands, and starting a decoder allocates its whole state. A
// handle serves the next image after an error too.
TjHandle& ThreadDecoder(std::string_view what) {
  thread_local TjHandle tj(nullptr);
  if (!tj.h) tj.h = Lib().init_decompress();
  TS_CHECK(tj.h) << what << ": cannot start the JPEG decoder: " << Lib().error_str(nullptr);
  return tj;
}

// The decoder's error text, the handle then dropped: TurboJPEG can leave a
// decompressor that failed mid-image in a state the next image trips on.
std::string ErrorAndDiscard(TjHandle& tj) {
  std::string e = Lib().error_str(tj.h);
  Lib().destroy(tj.h);
  tj.h = nullptr;
  return e;
}

Image DecodeJpeg(std::string_view bytes, int channels, std::string_view what) {
  TjHandle& tj = ThreadDecoder(what);
  auto* src = reinterpret_cast<const unsigned char*>(bytes.data());
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  TS_CHECK(Lib().decompress_header(tj.h, src, static_cast<unsigned long>(bytes.size()), &w, &h,
                                   &subsamp, &colorspace) == 0)
      << what << ": not a valid JPEG: " << ErrorAndDiscard(tj);
  CheckSize(h, w, what, "JPEG");
  Image im;
  im.height = h;
  im.width = w;
  im.channels = channels;
  im.pixels.resize(static_cast<size_t>(h) * static_cast<size_t>(w) * static_cast<size_t>(channels));
  // A warning (data cut short, a corrupt segment) stops the decode: the
  // default would fill the rest of the image with gray and carry on.
  const int rc =
      Lib().decompress(tj.h, src, static_cast<unsigned long>(bytes.size()), im.pixels.data(), w, 0,
                       h, channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING);
  TS_CHECK(rc == 0) << what << ": corrupt or truncated JPEG (" << w << "x" << h
                    << "): " << ErrorAndDiscard(tj);
  return im;
}

std::string EncodeJpeg(const Image& im, int quality, std::string_view what) {
  TS_CHECK(quality >= 1 && quality <= 100)
      << what << ": JPEG quality must be 1-100, got " << quality;
  TjHandle tj(Lib().init_compress());
  TS_CHECK(tj.h) << what << ": cannot start the JPEG encoder: " << Lib().error_str(nullptr);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const bool gray = im.channels == 1;
  const int rc = Lib().compress(tj.h, im.pixels.data(), static_cast<int>(im.width), 0,
                                static_cast<int>(im.height), gray ? TJPF_GRAY : TJPF_RGB, &out,
                                &size, gray ? TJSAMP_GRAY : TJSAMP_420, quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(out, Lib().free);
  TS_CHECK(rc == 0) << what << ": JPEG encoding failed: " << Lib().error_str(tj.h);
  return {reinterpret_cast<const char*>(out), size};
}

// ---- PNG ----

struct PngImage {
  png_image im;
  PngImage() {
    std::memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() {
    if (im.opaque) Lib().png_free(&im);  // only once the library read something
  }
};

Image DecodePng(std::string_view bytes, int channels, std::string_view what) {
  PngImage png;
  TS_CHECK(Lib().png_begin_read(&png.im, bytes.data(), bytes.size()))
      << what << ": not a valid PNG: " << png.im.message;
  CheckSize(png.im.height, png.im.width, what, "PNG");
  const int64_t h = png.im.height, w = png.im.width;
  // 8-bit, straight (not premultiplied) alpha, which is then dropped as
  // OpenCV's color read does; gray from color with OpenCV's weights.
  const bool source_gray = (png.im.format & PNG_FORMAT_FLAG_COLOR) == 0;
  const bool alpha = (png.im.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  png.im.format = source_gray ? (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY)
                              : (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB);
  const int in_channels = (source_gray ? 1 : 3) + (alpha ? 1 : 0);
  Image im;
  im.height = h;
  im.width = w;
  im.channels = channels;
  im.pixels.resize(static_cast<size_t>(h * w * channels));
  const bool direct = in_channels == channels;  // gray to gray, RGB to RGB
  std::vector<uint8_t> raw(direct ? 0 : static_cast<size_t>(h * w * in_channels));
  uint8_t* read_to = direct ? im.pixels.data() : raw.data();
  TS_CHECK(Lib().png_finish_read(&png.im, nullptr, read_to, 0, nullptr))
      << what << ": corrupt or truncated PNG (" << w << "x" << h << "): " << png.im.message;
  if (direct) return im;
  uint8_t* out = im.pixels.data();
  for (int64_t i = 0; i < h * w; ++i) {
    const uint8_t* p = raw.data() + i * in_channels;
    if (source_gray) {
      for (int c = 0; c < channels; ++c) out[i * channels + c] = p[0];
    } else if (channels == 3) {
      std::memcpy(out + i * 3, p, 3);
    } else {
      out[i] = static_cast<uint8_t>((299 * p[0] + 587 * p[1] + 114 * p[2] + 500) / 1000);
    }
  }
  return im;
}

std::string EncodePng(const Image& im, std::string_view what) {
  PngImage png;
  png.im.width = static_cast<png_uint_32>(im.width);
  png.im.height = static_cast<png_uint_32>(im.height);
  png.im.format = im.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  TS_CHECK(Lib().png_write(&png.im, nullptr, &size, 0, im.pixels.data(), 0, nullptr))
      << what << ": PNG encoding failed: " << png.im.message;
  std::string out(size, '\0');
  TS_CHECK(Lib().png_write(&png.im, out.data(), &size, 0, im.pixels.data(), 0, nullptr))
      << what << ": PNG encoding failed: " << png.im.message;
  out.resize(size);
  return out;
}

}  // namespace

bool SniffImageFormat(std::string_view b, ImageFormat* format) {
  if (b.size() >= sizeof kJpegSignature && std::memcmp(b.data(), kJpegSignature, 3) == 0) {
    *format = ImageFormat::kJpeg;
    return true;
  }
  if (b.size() >= sizeof kPngSignature &&
      std::memcmp(b.data(), kPngSignature, sizeof kPngSignature) == 0) {
    *format = ImageFormat::kPng;
    return true;
  }
  return false;
}

Image DecodeImage(std::string_view bytes, int channels, std::string_view what) {
  TS_CHECK(channels == 1 || channels == 3)
      << what << ": channels must be 1 (gray) or 3 (RGB), got " << channels;
  ImageFormat format;
  TS_CHECK(SniffImageFormat(bytes, &format))
      << what << ": not a JPEG or PNG image (" << bytes.size() << " bytes"
      << (bytes.empty() ? "" : ", starting " + FirstBytes(bytes)) << ")";
  return format == ImageFormat::kJpeg ? DecodeJpeg(bytes, channels, what)
                                      : DecodePng(bytes, channels, what);
}

Image CropImage(const Image& im, const ImageRegion& r) {
  TS_DCHECK(r.x >= 0 && r.y >= 0 && r.x + r.width <= im.width && r.y + r.height <= im.height);
  Image out;
  out.height = r.height;
  out.width = r.width;
  out.channels = im.channels;
  out.pixels.resize(static_cast<size_t>(r.height * r.width * im.channels));
  const size_t row = static_cast<size_t>(r.width * im.channels);
  for (int64_t y = 0; y < r.height; ++y)
    std::memcpy(out.pixels.data() + static_cast<size_t>(y) * row,
                im.pixels.data() + static_cast<size_t>(((r.y + y) * im.width + r.x) * im.channels),
                row);
  return out;
}

void PeekImageSize(std::string_view bytes, int64_t* width, int64_t* height, std::string_view what) {
  ImageFormat format;
  TS_CHECK(SniffImageFormat(bytes, &format))
      << what << ": not a JPEG or PNG image (" << bytes.size() << " bytes"
      << (bytes.empty() ? "" : ", starting " + FirstBytes(bytes)) << ")";
  if (format == ImageFormat::kJpeg) {
    TjHandle& tj = ThreadDecoder(what);
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    TS_CHECK(Lib().decompress_header(tj.h, reinterpret_cast<const unsigned char*>(bytes.data()),
                                     static_cast<unsigned long>(bytes.size()), &w, &h, &subsamp,
                                     &colorspace) == 0)
        << what << ": not a valid JPEG: " << ErrorAndDiscard(tj);
    *width = w;
    *height = h;
  } else {
    PngImage png;
    TS_CHECK(Lib().png_begin_read(&png.im, bytes.data(), bytes.size()))
        << what << ": not a valid PNG: " << png.im.message;
    *width = png.im.width;
    *height = png.im.height;
  }
  CheckSize(*height, *width, what, format == ImageFormat::kJpeg ? "JPEG" : "PNG");
}

Image DecodeImageRegion(std::string_view bytes, int channels, const ImageRegion& r,
                        std::string_view what) {
  Image decoded;
  const ImageRegion window = DecodeImageRegionInto(bytes, channels, r, what, &decoded);
  return CropImage(decoded, window);
}

ImageRegion DecodeImageRegionInto(std::string_view bytes, int channels, const ImageRegion& r,
                                  std::string_view what, Image* out) {
  TS_CHECK(channels == 1 || channels == 3)
      << what << ": channels must be 1 (gray) or 3 (RGB), got " << channels;
  ImageFormat format;
  ImageRegion window;
  if (SniffImageFormat(bytes, &format) && format == ImageFormat::kJpeg &&
      DecodeJpegRegion(bytes, channels, r, what, out, &window))
    return window;
  *out = DecodeImage(bytes, channels, what);
  TS_CHECK(r.x >= 0 && r.y >= 0 && r.width >= 1 && r.height >= 1 && r.x + r.width <= out->width &&
           r.y + r.height <= out->height)
      << what << ": the window " << r.width << "x" << r.height << " at (" << r.x << ", " << r.y
      << ") is not inside the " << out->width << "x" << out->height << " image";
  return r;
}

std::string EncodeImage(const Image& image, ImageFormat format, int quality,
                        std::string_view what) {
  TS_CHECK(image.channels == 1 || image.channels == 3)
      << what << ": images have 1 (gray) or 3 (RGB) channels, got " << image.channels;
  CheckSize(image.height, image.width, what, format == ImageFormat::kJpeg ? "JPEG" : "PNG");
  TS_CHECK(image.width <= 65535 && image.height <= 65535)
      << what << ": an image of " << image.width << "x" << image.height
      << " is too large to encode (65535 a side at most)";
  TS_CHECK(image.pixels.size() == static_cast<size_t>(image.height * image.width * image.channels))
      << what << ": " << image.pixels.size() << " bytes of pixels for " << image.width << "x"
      << image.height << "x" << image.channels;
  return format == ImageFormat::kJpeg ? EncodeJpeg(image, quality, what) : EncodePng(image, what);
}

}  // namespace tessera::io
