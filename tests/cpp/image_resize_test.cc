// Resizing through OpenCV's cv::resize: values on cases whose answer is
// known without OpenCV (area averages of whole blocks, nearest neighbours,
// identity), MXNet's automatic choice, and bad arguments.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "engine/io/image_resize.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::io;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

Image Make(int64_t h, int64_t w, int64_t c, std::vector<uint8_t> pixels) {
  Image im;
  im.height = h;
  im.width = w;
  im.channels = c;
  im.pixels = std::move(pixels);
  REQUIRE(im.pixels.size() == size_t(h * w * c));
  return im;
}

}  // namespace

TEST_CASE("area shrinks whole blocks to their mean; nearest repeats; same size is the identity") {
  // 4x4 gray, 2x2 blocks summing to multiples of 4.
  const Image src = Make(4, 4, 1, {0, 4, 8, 12, 8, 12, 16, 20, 100, 100, 40, 40, 100, 100, 40, 40});
  const Image area = ResizeImage(src, 2, 2, 3, "test");
  CHECK(area.pixels == std::vector<uint8_t>{6, 14, 100, 40});
  const Image small = Make(2, 2, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Image near = ResizeImage(small, 4, 4, 0, "test");
  REQUIRE(near.pixels.size() == 48);
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x)
      for (int64_t k = 0; k < 3; ++k)
        REQUIRE(near.pixels[size_t((y * 4 + x) * 3 + k)] ==
                small.pixels[size_t(((y / 2) * 2 + x / 2) * 3 + k)]);
  for (int interp : {0, 1, 2, 3, 4})
    CHECK(ResizeImage(small, 2, 2, interp, "t").pixels == small.pixels);
}

TEST_CASE("interp 9 is MXNet's: bicubic to enlarge, area to shrink, else bilinear") {
  CHECK(AutoInterpolation(10, 10, 20, 20) == 2);
  CHECK(AutoInterpolation(10, 10, 5, 5) == 3);
  CHECK(AutoInterpolation(10, 10, 20, 5) == 1);
  const Image src = Make(4, 4, 1, {0, 4, 8, 12, 8, 12, 16, 20, 100, 100, 40, 40, 100, 100, 40, 40});
  CHECK(ResizeImage(src, 2, 2, 9, "t").pixels == ResizeImage(src, 2, 2, 3, "t").pixels);
}

TEST_CASE("bad sizes and codes are errors") {
  const Image src = Make(2, 2, 1, {1, 2, 3, 4});
  CHECK(Contains(ErrorOf([&] { ResizeImage(src, 0, 2, 1, "imresize"); }),
                 "imresize: the size must be 1 to 65535 a side, got 0x2"));
  CHECK(Contains(ErrorOf([&] { ResizeImage(src, 2, 2, 7, "imresize"); }), "interp must be 0"));
  Image two = src;
  two.channels = 2;
  CHECK(Contains(ErrorOf([&] { ResizeImage(two, 2, 2, 1, "imresize"); }), "1 or 3 channels"));
}

TEST_CASE("a window resized in place equals the window cut out and resized") {
  std::vector<uint8_t> px;
  for (int i = 0; i < 23 * 31 * 3; ++i) px.push_back(uint8_t(i * 37 % 251));
  const Image src = Make(23, 31, 3, px);
  const ImageRegion r{5, 3, 17, 11};
  for (int interp : {0, 1, 2, 3, 4}) {
    Image in_place;
    ResizeWindowInto(src, r, 9, 7, interp, "t", &in_place);
    CHECK(in_place.pixels == ResizeImage(CropImage(src, r), 9, 7, interp, "t").pixels);
  }
}
