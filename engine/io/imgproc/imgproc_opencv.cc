// The image resampler: OpenCV's cv::resize, the one MXNet's image module
// calls, behind a C entry point. It is built as a library of its own
// (libtessera_imgproc.so) that image_resize.cc opens on the first resize:
// OpenCV's core is large, and nothing else needs it.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>

// `src_step`: bytes from one source row to the next (a window of a wider
// image is resized in place, without a copy).
extern "C" __attribute__((visibility("default"))) int tessera_imgproc_resize_strided(
    const uint8_t* src, int height, int width, int channels, size_t src_step, uint8_t* dst,
    int out_height, int out_width, int interp, char* error, size_t error_len) {
  try {
    // One thread: resizes run where the caller's threads already are (the
    // data pipeline's workers); OpenCV's own pool would oversubscribe them.
    static const bool single = (cv::setNumThreads(0), true);
    (void)single;
    const int type = CV_8UC(channels);
    const cv::Mat in(height, width, type, const_cast<uint8_t*>(src), src_step);
    cv::Mat out(out_height, out_width, type, dst);
    cv::resize(in, out, cv::Size(out_width, out_height), 0, 0, interp);
    // resize writes into `dst` unless it had to reallocate, which the
    // matching size and type rule out; say so if it ever did.
    if (out.data != dst) {
      std::snprintf(error, error_len, "cv::resize reallocated its output");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, error_len, "%s", e.what());
    return 1;
  }
}
