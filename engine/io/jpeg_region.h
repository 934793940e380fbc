// Decoding a window of a JPEG, and no more: libjpeg-turbo's libjpeg API
// skips the rows above the window (jpeg_skip_scanlines: entropy decoding
// only, no inverse DCT or color conversion), decodes only the iMCU columns
// the window touches (jpeg_crop_scanline), and stops after its last row.
// A random resized crop uses about half of an image on average, so its
// decode costs about half of a full one (as DALI's region-of-interest
// decoding). The pixels are those a full decode gives inside the window.
//
// libjpeg (libjpeg62-turbo) is opened on first use, as TurboJPEG is. A
// warning (data cut short, a corrupt segment) is an error, as with
// TurboJPEG's TJFLAG_STOPONWARNING in image_codec.cc.
#pragma once

#include <string_view>

#include "engine/io/image_codec.h"

namespace tessera::io {

// The window `r` (inside the image) of a JPEG as `channels` 1 or 3 (RGB),
// into *out (its memory reused): the rows of the window, as wide as the
// iMCU columns it touches, the window itself at *window inside them.
// False, with nothing decoded, for a JPEG this path does not take
// (CMYK and YCCK, which TurboJPEG converts itself): decode it whole instead.
bool DecodeJpegRegion(std::string_view bytes, int channels, const ImageRegion& r,
                      std::string_view what, Image* out, ImageRegion* window);

}  // namespace tessera::io
