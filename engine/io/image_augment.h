// The per-image steps of ImageRecordIter, MXNet's default augmenter
// (src/io/image_aug_default.cc) and its normaliser: resize the shorter edge,
// random scale and aspect, or a random resized crop (Inception's, as gluon's
// RandomResizedCrop), pad, crop to the output size (random or centred),
// mirror, then mean/std normalisation into CHW.
//
//   AugmentParams p;  p.channels = 3;  p.height = p.width = 224;  p.rand_crop = true;
//   std::mt19937_64 rng(seed);
//   Image out = AugmentImage(DecodeImage(bytes, 3, who), p, rng, who);
//   WriteCHW(out, DrawMirror(p, rng), norm, dst);        // float32
//
// Each call draws only from the `rng` it is given, so an image's
// augmentation depends on its seed alone, not on which thread ran it.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

#include "engine/io/image_codec.h"

namespace tessera::io {

struct AugmentParams {
  int64_t channels = 3, height = 0, width = 0;  // the output (data_shape)
  int resize = -1;                              // shorter edge first, when > 0
  bool rand_crop = false;                       // random crop position, else centred
  bool random_resized_crop = false;
  float min_random_area = 1, max_random_area = 1;  // of the image, for random_resized_crop
  float min_random_scale = 1, max_random_scale = 1;
  float max_aspect_ratio = 0;
  float min_aspect_ratio = -1;  // < 0: unset (1 - max_aspect_ratio, or its inverse for the crop)
  int min_crop_size = -1, max_crop_size = -1;  // a random square crop, resized to the output
  int pad = 0, fill_value = 255;
  int inter_method = 1;  // OpenCV's codes 0-4, 9 auto, 10 random
  bool rand_mirror = false, mirror = false;
};

// Errors for values MXNet refuses (naming `what` and the parameter).
void CheckAugmentParams(const AugmentParams& p, std::string_view what);

// A decoded image (p.channels channels) to p.height x p.width, HWC.
Image AugmentImage(Image im, const AugmentParams& p, std::mt19937_64& rng, std::string_view what);

// The same in two steps, when a window of the source is all that reaches
// the output (no resize first, no scale or stretch, no pad): PlanWindow
// draws the window from the source's size alone, so a decoder can decode
// just that (DecodeImageRegion); FromWindow makes the output from it. The
// draws are AugmentImage's, in its order: both ways give the same image.
bool CropsDirectly(const AugmentParams& p);
ImageRegion PlanWindow(int64_t width, int64_t height, const AugmentParams& p, std::mt19937_64& rng,
                       std::string_view what);
// A window of an image, seen in place.
struct ImageView {
  const Image* image = nullptr;
  ImageRegion window;
};

// The output from the window of src: the window itself when it has the
// output's size, else *scratch, the window resized into it (read in place,
// its memory reused).
ImageView FromWindow(const Image& src, const ImageRegion& window, const AugmentParams& p,
                     std::mt19937_64& rng, std::string_view what, Image* scratch);

// Whether to mirror this image (drawn after AugmentImage, as MXNet's).
bool DrawMirror(const AugmentParams& p, std::mt19937_64& rng);

// out = (pixel - mean[c]) * mult[c] (MXNet's scale / std_c), channel order as decoded (RGB).
struct Normalize {
  float mean[3] = {0, 0, 0};
  float mult[3] = {1, 1, 1};
};

// The image (HWC), or a window of it, into dst as CHW, mirrored left-right
// when asked.
void WriteCHW(const Image& im, bool mirror, const Normalize& norm, float* dst);
void WriteCHW(const Image& im, bool mirror, uint8_t* dst);
void WriteCHW(const ImageView& v, bool mirror, const Normalize& norm, float* dst);
void WriteCHW(const ImageView& v, bool mirror, uint8_t* dst);

}  // namespace tessera::io
