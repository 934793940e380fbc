#include "engine/io/image_augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/base/error.h"
#include "engine/io/image_resize.h"

namespace tessera::io {
namespace {

// ---- draws ----

float Uniform(std::mt19937_64& rng, float lo, float hi) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  return lo + static_cast<float>(u) * (hi - lo);
}

int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  TS_DCHECK(hi >= lo);
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// MXNet's inter_method for a resize from (w, h) to (nw, nh).
int Interp(int method, int64_t w, int64_t h, int64_t nw, int64_t nh, std::mt19937_64& rng) {
  if (method == 9) return AutoInterpolation(w, h, nw, nh);
  if (method == 10) return static_cast<int>(UniformInt(rng, 0, 4));
  return method;
}

// ---- geometry ----

// `im` centred on a canvas of (w, h) filled with `fill`: cut where it is
// larger, bordered where it is smaller.
Image Centre(const Image& im, int64_t w, int64_t h, int fill) {
  Image out;
  out.height = h;
  out.width = w;
  out.channels = im.channels;
  out.pixels.assign(static_cast<size_t>(h * w * im.channels), static_cast<uint8_t>(fill));
  const int64_t dx = (w - im.width) / 2, dy = (h - im.height) / 2;  // canvas minus image
  const int64_t x0 = std::max<int64_t>(0, dx), y0 = std::max<int64_t>(0, dy);
  const int64_t sx = std::max<int64_t>(0, -dx), sy = std::max<int64_t>(0, -dy);
  const int64_t cw = std::min(w - x0, im.width - sx), ch = std::min(h - y0, im.height - sy);
  for (int64_t r = 0; r < ch; ++r)
    std::memcpy(out.pixels.data() + static_cast<size_t>(((y0 + r) * w + x0) * im.channels),
                im.pixels.data() + static_cast<size_t>(((sy + r) * im.width + sx) * im.channels),
                static_cast<size_t>(cw * im.channels));
  return out;
}

Image ResizeTo(Image im, int64_t w, int64_t h, const AugmentParams& p, std::mt19937_64& rng,
               std::string_view what) {
  if (w == im.width && h == im.height) return im;  // moved, not copied
  return ResizeImage(im, w, h, Interp(p.inter_method, im.width, im.height, w, h, rng), what);
}

// The shorter edge to p.resize, as MXNet's (integer arithmetic included).
Image ResizeShorter(const Image& im, const AugmentParams& p, std::mt19937_64& rng,
                    std::string_view what) {
  int64_t w = p.resize, h = p.resize;
  if (im.height > im.width)
    h = p.resize * im.height / im.width;
  else
    w = p.resize * im.width / im.height;
  return ResizeTo(im, std::max<int64_t>(w, 1), std::max<int64_t>(h, 1), p, rng, what);
}

bool ScalesOrStretches(const AugmentParams& p) {
  return p.min_random_scale != 1 || p.max_random_scale != 1 || p.max_aspect_ratio != 0;
}

// MXNet's affine step without rotation or shear: the image stretched by
// (hs, ws) = (2s / (1 + r), r * hs) and centred on a canvas s times its size.
Image ScaleAndStretch(const Image& im, const AugmentParams& p, std::mt19937_64& rng,
                      std::string_view what) {
  const float s = Uniform(rng, p.min_random_scale, p.max_random_scale);
  const float r = p.min_aspect_ratio >= 0
                      ? Uniform(rng, p.min_aspect_ratio, p.max_aspect_ratio)
                      : Uniform(rng, 1 - p.max_aspect_ratio, 1 + p.max_aspect_ratio);
  const float hs = 2 * s / (1 + r), ws = r * hs;
  const auto round = [](double v) { return std::max<int64_t>(1, std::llround(v)); };
  const Image stretched = ResizeTo(im, round(hs * im.width), round(ws * im.height), p, rng, what);
  return Centre(stretched, round(s * im.width), round(s * im.height), p.fill_value);
}

// Inception's crop: an area fraction in [min_random_area, max_random_area]
// and a width/height ratio drawn log-uniformly from [min_aspect_ratio,
// max_aspect_ratio] (as torchvision's and gluon's), ten tries, else the
// centred largest window of the output's shape.
ImageRegion RandomResizedWindow(int64_t width, int64_t height, const AugmentParams& p,
                                std::mt19937_64& rng) {
  float lo = p.min_aspect_ratio, hi = p.max_aspect_ratio;
  if (hi <= 0) lo = hi = 1;
  if (lo < 0) lo = 1 / hi;
  if (lo > hi) std::swap(lo, hi);
  const double area = static_cast<double>(width * height);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * Uniform(rng, p.min_random_area, p.max_random_area);
    const double ratio = std::exp(Uniform(rng, std::log(lo), std::log(hi)));
    const int64_t w = std::llround(std::sqrt(target * ratio));
    const int64_t h = std::llround(std::sqrt(target / ratio));
    if (w < 1 || h < 1 || w > width || h > height) continue;
    return {UniformInt(rng, 0, width - w), UniformInt(rng, 0, height - h), w, h};
  }
  int64_t w = width, h = std::max<int64_t>(1, w * p.height / p.width);
  if (h > height) {
    h = height;
    w = std::clamp<int64_t>(h * p.width / p.height, 1, width);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Image Pad(const Image& im, int pad, int fill) {
  return Centre(im, im.width + 2 * pad, im.height + 2 * pad, fill);
}

// A random square of a size in [min_crop_size, max_crop_size], or the
// output's size at a random or the centred position.
ImageRegion CropWindow(int64_t width, int64_t height, const AugmentParams& p, std::mt19937_64& rng,
                       std::string_view what) {
  const auto position = [&](int64_t room) {
    return p.rand_crop ? UniformInt(rng, 0, room) : room / 2;
  };
  if (p.max_crop_size != -1 || p.min_crop_size != -1) {
    TS_CHECK(width >= p.max_crop_size && height >= p.max_crop_size)
        << what << ": an image of " << width << "x" << height << " is smaller than max_crop_size "
        << p.max_crop_size;
    const int64_t size = UniformInt(rng, p.min_crop_size, p.max_crop_size);
    const int64_t y = position(height - size), x = position(width - size);
    return {x, y, size, size};
  }
  TS_CHECK(height >= p.height && width >= p.width)
      << what << ": an image of " << width << "x" << height << " (after resize) is smaller than "
      << "data_shape's " << p.width << "x" << p.height << " (set resize, or a smaller data_shape)";
  const int64_t y = position(height - p.height), x = position(width - p.width);
  return {x, y, p.width, p.height};
}

}  // namespace

void CheckAugmentParams(const AugmentParams& p, std::string_view what) {
  TS_CHECK(p.channels == 1 || p.channels == 3)
      << what << ": data_shape must have 1 or 3 channels, got " << p.channels;
  TS_CHECK(p.height >= 1 && p.width >= 1 && p.height * p.width <= kMaxImagePixels)
      << what << ": data_shape's height and width must be positive, got " << p.height << "x"
      << p.width;
  TS_CHECK((p.inter_method >= 0 && p.inter_method <= 4) || p.inter_method == 9 ||
           p.inter_method == 10)
      << what << ": inter_method must be 0-4, 9 or 10, got " << p.inter_method;
  TS_CHECK(p.resize == -1 || (p.resize >= 1 && p.resize <= 65536))
      << what << ": resize must be -1 (off) or from 1 to 65536, got " << p.resize;
  TS_CHECK(p.min_random_scale > 0 && p.min_random_scale <= p.max_random_scale &&
           p.max_random_scale <= 64)
      << what << ": need 0 < min_random_scale <= max_random_scale <= 64, got " << p.min_random_scale
      << " and " << p.max_random_scale;
  TS_CHECK(p.max_aspect_ratio >= 0 && p.max_aspect_ratio < 64)
      << what << ": max_aspect_ratio must be in [0, 64), got " << p.max_aspect_ratio;
  TS_CHECK(p.min_aspect_ratio < 0 || p.min_aspect_ratio <= p.max_aspect_ratio)
      << what << ": min_aspect_ratio " << p.min_aspect_ratio << " is above max_aspect_ratio "
      << p.max_aspect_ratio;
  TS_CHECK(!ScalesOrStretches(p) || p.min_aspect_ratio >= 0 || p.max_aspect_ratio < 1)
      << what << ": max_aspect_ratio must be below 1 unless min_aspect_ratio is set (the "
      << "ratio is drawn from [1 - max_aspect_ratio, 1 + max_aspect_ratio]), got "
      << p.max_aspect_ratio;
  TS_CHECK(p.min_random_area > 0 && p.min_random_area <= p.max_random_area &&
           p.max_random_area <= 1)
      << what << ": need 0 < min_random_area <= max_random_area <= 1, got " << p.min_random_area
      << " and " << p.max_random_area;
  TS_CHECK(p.pad >= 0 && p.pad <= 4096) << what << ": pad must be from 0 to 4096, got " << p.pad;
  TS_CHECK(p.fill_value >= 0 && p.fill_value <= 255)
      << what << ": fill_value must be from 0 to 255, got " << p.fill_value;
  const bool crop_sizes = p.max_crop_size != -1 || p.min_crop_size != -1;
  TS_CHECK(!crop_sizes || (p.min_crop_size >= 1 && p.min_crop_size <= p.max_crop_size))
      << what << ": need 1 <= min_crop_size <= max_crop_size, got " << p.min_crop_size << " and "
      << p.max_crop_size;
}

bool CropsDirectly(const AugmentParams& p) {
  return p.resize <= 0 && p.pad == 0 && (p.random_resized_crop || !ScalesOrStretches(p));
}

ImageRegion PlanWindow(int64_t width, int64_t height, const AugmentParams& p, std::mt19937_64& rng,
                       std::string_view what) {
  return p.random_resized_crop ? RandomResizedWindow(width, height, p, rng)
                               : CropWindow(width, height, p, rng, what);
}

ImageView FromWindow(const Image& src, const ImageRegion& window, const AugmentParams& p,
                     std::mt19937_64& rng, std::string_view what, Image* scratch) {
  if (window.width == p.width && window.height == p.height) return {&src, window};
  ResizeWindowInto(src, window, p.width, p.height,
                   Interp(p.inter_method, window.width, window.height, p.width, p.height, rng),
                   what, scratch);
  return {scratch, {0, 0, p.width, p.height}};
}

Image AugmentImage(Image im, const AugmentParams& p, std::mt19937_64& rng, std::string_view what) {
  TS_DCHECK(im.channels == p.channels);
  if (p.resize > 0) im = ResizeShorter(im, p, rng, what);
  if (p.random_resized_crop) {
    Image out;
    const ImageView v =
        FromWindow(im, RandomResizedWindow(im.width, im.height, p, rng), p, rng, what, &out);
    im = v.image == &out ? std::move(out) : CropImage(im, v.window);
    return p.pad > 0 ? ResizeTo(Pad(im, p.pad, p.fill_value), p.width, p.height, p, rng, what) : im;
  }
  if (ScalesOrStretches(p)) im = ScaleAndStretch(im, p, rng, what);
  if (p.pad > 0) im = Pad(im, p.pad, p.fill_value);
  const ImageRegion r = CropWindow(im.width, im.height, p, rng, what);
  Image out;
  const ImageView v = FromWindow(im, r, p, rng, what, &out);
  if (v.image == &out) return out;
  if (r.x == 0 && r.y == 0 && r.width == im.width && r.height == im.height) return im;
  return CropImage(im, r);
}

bool DrawMirror(const AugmentParams& p, std::mt19937_64& rng) {
  if (p.mirror) return true;
  return p.rand_mirror && (rng() >> 63) != 0;
}

namespace {

// Row by row, each pixel read once and its channels sent to their planes
// (one read stream, c write streams: faster than a plane at a time).
// `value(k, v)` is what channel k's byte v becomes.
template <typename T, typename Value>
void WritePlanes(const ImageView& v, bool mirror, T* dst, const Value& value) {
  const Image& im = *v.image;
  const int64_t c = im.channels, w = v.window.width, plane = v.window.height * w;
  TS_DCHECK(c == 1 || c == 3);
  TS_DCHECK(v.window.x + w <= im.width && v.window.y + v.window.height <= im.height);
  for (int64_t y = 0; y < v.window.height; ++y) {
    const uint8_t* src =
        im.pixels.data() + static_cast<size_t>(((v.window.y + y) * im.width + v.window.x) * c);
    T* out = dst + y * w;
    if (c == 1) {
      for (int64_t x = 0; x < w; ++x) out[mirror ? w - 1 - x : x] = value(0, src[x]);
      continue;
    }
    T *r = out, *g = out + plane, *b = out + 2 * plane;
    if (mirror)
      for (int64_t x = 0, m = w - 1; x < w; ++x, --m) {
        r[m] = value(0, src[3 * x]);
        g[m] = value(1, src[3 * x + 1]);
        b[m] = value(2, src[3 * x + 2]);
      }
    else
      for (int64_t x = 0; x < w; ++x) {
        r[x] = value(0, src[3 * x]);
        g[x] = value(1, src[3 * x + 1]);
        b[x] = value(2, src[3 * x + 2]);
      }
  }
}

}  // namespace

void WriteCHW(const ImageView& v, bool mirror, const Normalize& norm, float* dst) {
  // A table of the 256 values per channel: a load and a store an element.
  float table[3][256];
  for (int64_t k = 0; k < v.image->channels; ++k)
    for (int x = 0; x < 256; ++x)
      table[k][x] = (static_cast<float>(x) - norm.mean[k]) * norm.mult[k];
  WritePlanes(v, mirror, dst, [&](int64_t k, uint8_t x) { return table[k][x]; });
}

void WriteCHW(const ImageView& v, bool mirror, uint8_t* dst) {
  WritePlanes(v, mirror, dst, [](int64_t, uint8_t x) { return x; });
}

void WriteCHW(const Image& im, bool mirror, const Normalize& norm, float* dst) {
  WriteCHW(ImageView{&im, {0, 0, im.width, im.height}}, mirror, norm, dst);
}

void WriteCHW(const Image& im, bool mirror, uint8_t* dst) {
  WriteCHW(ImageView{&im, {0, 0, im.width, im.height}}, mirror, dst);
}

}  // namespace tessera::io
