// Images in and out of JPEG (libjpeg-turbo's TurboJPEG API) and PNG
// (libpng's simplified API), as 8-bit pixels in height x width x channels
// order: RGB (3 channels) or gray (1). No codec of our own.
//
//   Image im = DecodeImage(bytes, 3, "imdecode");     // any JPEG or PNG
//   std::string jpg = EncodeImage(im, ImageFormat::kJpeg, 95, "pack_img");
//
// What a decoder is told by the file is checked before memory is taken for
// it (at most kMaxImagePixels pixels), and a corrupt or truncated file is
// an error naming the format and what the library said: a JPEG cut short
// is refused, not filled with gray as libjpeg would by default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::io {

enum class ImageFormat { kJpeg, kPng };

struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels, row-major HWC
};

// A window of an image: columns [x, x + width), rows [y, y + height).
struct ImageRegion {
  int64_t x = 0, y = 0, width = 0, height = 0;
};

// OpenCV's default bound (CV_IO_MAX_IMAGE_PIXELS), which MXNet decodes under.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 30;

// The format of `bytes` from its signature; false when it is neither.
bool SniffImageFormat(std::string_view bytes, ImageFormat* format);

// Decodes a JPEG or PNG to `channels` 3 (RGB; gray and palette images are
// expanded, alpha dropped) or 1 (gray: JPEG's luma, or 0.299 R + 0.587 G +
// 0.114 B for color PNGs, as OpenCV's). `what` starts error messages.
Image DecodeImage(std::string_view bytes, int channels, std::string_view what);

// The width and height a JPEG or PNG declares, from its header alone (the
// size checked as DecodeImage checks it).
void PeekImageSize(std::string_view bytes, int64_t* width, int64_t* height, std::string_view what);

// The window `r` of the image, which must lie inside it: for a JPEG only
// the window is decoded (engine/io/jpeg_region.h); a PNG is decoded whole
// and cut.
Image DecodeImageRegion(std::string_view bytes, int channels, const ImageRegion& r,
                        std::string_view what);
// The same without a copy: *out (its memory reused, a pipeline worker's
// scratch image) holds at least the window, which is at the region returned.
ImageRegion DecodeImageRegionInto(std::string_view bytes, int channels, const ImageRegion& r,
                                  std::string_view what, Image* out);

// The window `r` (inside `im`) as an image of its own.
Image CropImage(const Image& im, const ImageRegion& r);

// Encodes 8-bit HWC pixels (1 or 3 channels). JPEG `quality` is 1-100
// (4:2:0 chroma for color); PNG ignores it.
std::string EncodeImage(const Image& image, ImageFormat format, int quality, std::string_view what);

}  // namespace tessera::io
