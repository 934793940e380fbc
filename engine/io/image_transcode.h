// im2rec's per-image work on a pool of threads: files read, decoded, centre
// cropped, resized (shorter side) and encoded again, or passed through as
// they are. The results come back in the order of the paths, so records are
// written in list order whatever the threads.
//
//   TranscodeOptions o;  o.resize = 256;  o.format = ImageFormat::kJpeg;
//   std::vector<std::string> payloads = TranscodeFiles(paths, o, /*threads=*/4);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/io/image_codec.h"

namespace tessera::io {

struct TranscodeOptions {
  bool pass_through = false;  // the file's bytes as they are
  int channels = 3;           // 3 (color) or 1 (gray)
  bool center_crop = false;   // the central square first
  int resize = 0;             // > 0: the shorter side to this (MXNet's automatic interpolation)
  ImageFormat format = ImageFormat::kJpeg;
  int quality = 95;
};

// One image's bytes, transcoded. `what` starts error messages.
std::string TranscodeImage(std::string_view bytes, const TranscodeOptions& o,
                           std::string_view what);

// Every file of `paths`, on `threads` threads (0: one per core), in order.
// The first error (naming its file) is thrown once all threads stopped.
std::vector<std::string> TranscodeFiles(const std::vector<std::string>& paths,
                                        const TranscodeOptions& o, int threads,
                                        std::string_view what);

}  // namespace tessera::io
