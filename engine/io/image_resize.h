// Resizing images (8-bit HWC, 1 or 3 channels) with OpenCV's cv::resize, as
// MXNet's mx.image.imresize does. The interpolation codes are OpenCV's, as
// MXNet passes them: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos;
// MXNet's 9 picks bicubic to enlarge, area to shrink, bilinear otherwise;
// 10 (one of 0-4 at random) is resolved by the caller.
//
// OpenCV is opened on the first resize (libtessera_imgproc.so, a small
// library linked to it), not with the program.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/io/image_codec.h"

namespace tessera::io {

// The code 9 stands for, for a resize from (w, h) to (out_w, out_h).
int AutoInterpolation(int64_t w, int64_t h, int64_t out_w, int64_t out_h);

Image ResizeImage(const Image& src, int64_t out_width, int64_t out_height, int interp,
                  std::string_view what);
// The same into *out (another image), reusing its memory: a pipeline's
// workers resize thousands of images to one size.
void ResizeImageInto(const Image& src, int64_t out_width, int64_t out_height, int interp,
                     std::string_view what, Image* out);
// The window `r` of src resized into *out, read in place (no copy of it).
void ResizeWindowInto(const Image& src, const ImageRegion& r, int64_t out_width, int64_t out_height,
                      int interp, std::string_view what, Image* out);

}  // namespace tessera::io
