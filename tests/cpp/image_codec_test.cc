// JPEG and PNG through libjpeg-turbo and libpng: round trips (PNG exact,
// JPEG close), gray and alpha, and every way a file can be cut, corrupted
// or lie about its size.
#include <doctest/doctest.h>

#include <png.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/io/image_codec.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::io;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

Image Gradient(int64_t h, int64_t w, int64_t c) {
  Image im;
  im.height = h;
  im.width = w;
  im.channels = c;
  im.pixels.resize(size_t(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        im.pixels[size_t((y * w + x) * c + k)] = uint8_t((y * 7 + x * 3 + k * 60) % 256);
  return im;
}

double MeanAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
  return s / double(a.size());
}

}  // namespace

TEST_CASE("PNG round trips exactly, color and gray") {
  for (int64_t c : {3, 1}) {
    const Image im = Gradient(23, 37, c);
    const std::string png = EncodeImage(im, ImageFormat::kPng, 95, "test");
    ImageFormat f;
    REQUIRE(SniffImageFormat(png, &f));
    CHECK(f == ImageFormat::kPng);
    const Image back = DecodeImage(png, int(c), "test");
    CHECK(back.height == 23);
    CHECK(back.width == 37);
    CHECK(back.channels == c);
    CHECK(back.pixels == im.pixels);
  }
  // Gray decoded as color repeats the gray; color as gray uses OpenCV's weights.
  const Image gray = Gradient(5, 6, 1);
  const Image as_color = DecodeImage(EncodeImage(gray, ImageFormat::kPng, 0, "t"), 3, "t");
  for (size_t i = 0; i < gray.pixels.size(); ++i)
    for (int k = 0; k < 3; ++k) REQUIRE(as_color.pixels[i * 3 + size_t(k)] == gray.pixels[i]);
  const Image color = Gradient(5, 6, 3);
  const Image as_gray = DecodeImage(EncodeImage(color, ImageFormat::kPng, 0, "t"), 1, "t");
  for (size_t i = 0; i < as_gray.pixels.size(); ++i) {
    const uint8_t* p = &color.pixels[i * 3];
    REQUIRE(std::abs(as_gray.pixels[i] - (0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2])) <= 0.5);
  }
}

TEST_CASE("PNG alpha is dropped, the color kept as stored") {
  std::vector<uint8_t> rgba{10, 20, 30, 0, 200, 100, 50, 128, 1, 2, 3, 255};
  png_image w;
  std::memset(&w, 0, sizeof w);
  w.version = PNG_IMAGE_VERSION;
  w.width = 3;
  w.height = 1;
  w.format = PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  REQUIRE(png_image_write_to_memory(&w, nullptr, &size, 0, rgba.data(), 0, nullptr));
  std::string png(size, '\0');
  REQUIRE(png_image_write_to_memory(&w, png.data(), &size, 0, rgba.data(), 0, nullptr));
  png.resize(size);
  const Image im = DecodeImage(png, 3, "test");
  CHECK(im.pixels == std::vector<uint8_t>{10, 20, 30, 200, 100, 50, 1, 2, 3});
}

TEST_CASE("JPEG round trips closely; gray is the luma") {
  // Smooth, as photographs are: JPEG keeps those closest.
  Image im = Gradient(48, 64, 3);
  for (int64_t y = 0; y < 48; ++y)
    for (int64_t x = 0; x < 64; ++x)
      for (int64_t k = 0; k < 3; ++k)
        im.pixels[size_t((y * 64 + x) * 3 + k)] = uint8_t(y * 2 + x + k * 30);
  const std::string jpg = EncodeImage(im, ImageFormat::kJpeg, 100, "test");
  ImageFormat f;
  REQUIRE(SniffImageFormat(jpg, &f));
  CHECK(f == ImageFormat::kJpeg);
  const Image back = DecodeImage(jpg, 3, "test");
  CHECK(back.height == 48);
  CHECK(back.width == 64);
  CHECK(MeanAbsDiff(back.pixels, im.pixels) < 4.0);
  const Image gray = DecodeImage(jpg, 1, "test");
  std::vector<uint8_t> luma(gray.pixels.size());
  for (size_t i = 0; i < luma.size(); ++i) {
    const uint8_t* p = &back.pixels[i * 3];
    luma[i] = uint8_t(std::lround(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]));
  }
  CHECK(MeanAbsDiff(gray.pixels, luma) < 2.0);
  const Image g1 = Gradient(16, 16, 1);
  CHECK(MeanAbsDiff(DecodeImage(EncodeImage(g1, ImageFormat::kJpeg, 100, "t"), 1, "t").pixels,
                    g1.pixels) < 2.0);
}

TEST_CASE("cut, corrupted and oversized images are errors, not crashes or huge allocations") {
  const Image im = Gradient(40, 40, 3);
  const std::string jpg = EncodeImage(im, ImageFormat::kJpeg, 90, "t");
  const std::string png = EncodeImage(im, ImageFormat::kPng, 0, "t");
  CHECK(Contains(ErrorOf([&] { DecodeImage(jpg.substr(0, jpg.size() / 2), 3, "imdecode"); }),
                 "imdecode: corrupt or truncated JPEG (40x40)"));
  const std::string cut_header = ErrorOf([&] { DecodeImage(jpg.substr(0, 20), 3, "imdecode"); });
  CHECK(Contains(cut_header, "imdecode: "));
  CHECK(Contains(cut_header, "JPEG"));
  CHECK(Contains(ErrorOf([&] { DecodeImage(png.substr(0, png.size() - 20), 3, "imdecode"); }),
                 "PNG"));
  // A flipped byte in the image data breaks its chunk's CRC.
  std::string bad = png;
  const size_t idat = bad.find("IDAT");
  REQUIRE(idat != std::string::npos);
  bad[idat + 10] = char(bad[idat + 10] ^ 0x55);
  CHECK(Contains(ErrorOf([&] { DecodeImage(bad, 3, "imdecode"); }), "corrupt or truncated PNG"));
  CHECK(Contains(ErrorOf([&] { DecodeImage("GIF89a...", 3, "imdecode"); }),
                 "not a JPEG or PNG image (9 bytes, starting 47 49 46 38)"));
  CHECK(Contains(ErrorOf([&] { DecodeImage("", 3, "imdecode"); }), "(0 bytes)"));
  CHECK(Contains(ErrorOf([&] { DecodeImage(png, 2, "imdecode"); }), "channels must be 1"));
  // A header claiming 60000 x 60000 pixels (SOF0 of the JPEG; IHDR of the
  // PNG, its CRC made right) is refused before anything that size is taken.
  std::string big_jpg = jpg;
  const size_t sof = big_jpg.find("\xff\xc0");
  REQUIRE(sof != std::string::npos);
  big_jpg.replace(sof + 5, 4, "\xea\x60\xea\x60");
  CHECK(Contains(ErrorOf([&] { DecodeImage(big_jpg, 3, "imdecode"); }), "60000x60000, more than"));
  std::string big_png = png;
  big_png.replace(16, 8, std::string("\x00\x00\xff\xff\x00\x00\xff\xff", 8));
  const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(big_png.data() + 12), 17));
  for (int i = 0; i < 4; ++i) big_png[size_t(29 + i)] = char(crc >> (24 - 8 * i));
  CHECK(Contains(ErrorOf([&] { DecodeImage(big_png, 3, "imdecode"); }), "65535x65535, more than"));
  // Encoding checks its arguments.
  CHECK(Contains(ErrorOf([&] { EncodeImage(im, ImageFormat::kJpeg, 0, "imencode"); }),
                 "quality must be 1-100"));
  Image two = Gradient(2, 2, 2);
  CHECK(Contains(ErrorOf([&] { EncodeImage(two, ImageFormat::kPng, 0, "imencode"); }),
                 "1 (gray) or 3 (RGB) channels"));
}

TEST_CASE("randomly corrupted and cut images decode or fail cleanly") {
  const Image im = Gradient(24, 32, 3);
  std::mt19937 rng(11);
  for (ImageFormat f : {ImageFormat::kJpeg, ImageFormat::kPng}) {
    const std::string good = EncodeImage(im, f, 80, "t");
    int failed = 0;
    for (int round = 0; round < 300; ++round) {
      std::string bad = good;
      const int flips = 1 + int(rng() % 8);
      for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = char(rng());
      if (rng() % 3 == 0) bad.resize(rng() % bad.size());
      try {
        const Image out = DecodeImage(bad, 3, "fuzz");
        REQUIRE(out.pixels.size() == size_t(out.height * out.width * 3));
      } catch (const Error&) {
        ++failed;
      }
    }
    CHECK(failed > 0);  // the corruptions were seen
  }
}

TEST_CASE("a window decodes to the same pixels as the whole image cut; peeked sizes") {
  std::mt19937 rng(5);
  for (int c : {3, 1}) {
    // Odd sizes and a textured gradient: iMCU edges fall inside the windows.
    Image im = Gradient(61, 83, 3);
    for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] ^= uint8_t(rng() & 31);
    for (ImageFormat f : {ImageFormat::kJpeg, ImageFormat::kPng}) {
      const std::string bytes = EncodeImage(im, f, 85, "t");
      int64_t w = 0, h = 0;
      PeekImageSize(bytes, &w, &h, "t");
      CHECK(w == 83);
      CHECK(h == 61);
      const Image whole = DecodeImage(bytes, c, "t");
      for (int trial = 0; trial < 40; ++trial) {
        ImageRegion r;
        r.width = 1 + int64_t(rng() % 83);
        r.height = 1 + int64_t(rng() % 61);
        r.x = int64_t(rng() % uint64_t(83 - r.width + 1));
        r.y = int64_t(rng() % uint64_t(61 - r.height + 1));
        const Image win = DecodeImageRegion(bytes, c, r, "t");
        REQUIRE(win.pixels == CropImage(whole, r).pixels);
      }
      ImageRegion outside;
      outside.x = 80;
      outside.width = 10;
      outside.height = 5;
      CHECK(Contains(ErrorOf([&] { DecodeImageRegion(bytes, c, outside, "win"); }),
                     "win: the window 10x5 at (80, 0) is not inside the 83x61"));
    }
  }
  // Cut and corrupted JPEGs fail cleanly on the window path too.
  const std::string good = EncodeImage(Gradient(40, 40, 3), ImageFormat::kJpeg, 80, "t");
  ImageRegion r;
  r.x = 5;
  r.y = 20;
  r.width = 30;
  r.height = 15;
  int failed = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bad = good;
    for (int k = 0; k < 1 + int(rng() % 8); ++k) bad[rng() % bad.size()] = char(rng());
    if (rng() % 2 == 0) bad.resize(rng() % bad.size());
    try {
      const Image out = DecodeImageRegion(bad, 3, r, "fuzz");
      REQUIRE(out.pixels.size() == size_t(30 * 15 * 3));
    } catch (const Error&) {
      ++failed;
    }
  }
  CHECK(failed > 0);
  CHECK(Contains(ErrorOf([&] { DecodeImageRegion(good.substr(0, good.size() / 2), 3, r, "cut"); }),
                 "cut: corrupt or truncated JPEG"));
}
