#include "engine/io/jpeg_region.h"

#include <dlfcn.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "engine/base/error.h"
#include "engine/base/shared_library.h"

namespace tessera::io {
namespace {

// ---- libjpeg, opened on first use (the header gives the types) ----

#define TS_LIBJPEG_FUNCTIONS(X)          \
  X(std_error, jpeg_std_error)           \
  X(create, jpeg_CreateDecompress)       \
  X(mem_src, jpeg_mem_src)               \
  X(read_header, jpeg_read_header)       \
  X(start, jpeg_start_decompress)        \
  X(crop_scanline, jpeg_crop_scanline)   \
  X(skip_scanlines, jpeg_skip_scanlines) \
  X(read_scanlines, jpeg_read_scanlines) \
  X(abort, jpeg_abort_decompress)        \
  X(destroy, jpeg_destroy_decompress)

struct Libjpeg {
  TS_LIBRARY_FUNCTIONS(TS_LIBJPEG_FUNCTIONS)
};

Libjpeg LoadLibjpeg() {
  void* lib = nullptr;
  for (const char* name : {TESSERA_JPEG_LIBRARY, "libjpeg.so.62"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  TS_CHECK(lib) << "images: cannot load libjpeg.so.62 (install libjpeg62-turbo): " << dlerror();
  Libjpeg l;
  l.Bind(lib, "images: the libjpeg loaded");
  return l;
}

const Libjpeg& Lib() {
  static const Libjpeg l = LoadLibjpeg();
  return l;
}

// ---- errors: libjpeg's error_exit must not return; it jumps back ----

struct ErrorJump {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void OnError(j_common_ptr c) {
  auto* e = reinterpret_cast<ErrorJump*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (level -1) stop the decode; trace messages are ignored.
void OnMessage(j_common_ptr c, int level) {
  if (level < 0) OnError(c);
}

// Everything the decode touches, on the heap so that a jump back leaves
// nothing in registers to doubt (only the pointer to it is a local).
struct Job {
  jpeg_decompress_struct cinfo;
  ErrorJump err;
  const unsigned char* src;
  unsigned long size;
  int channels;
  ImageRegion r;
  int64_t x = 0;  // where the window starts in the decoded rows
  bool created = false;
  bool unsupported = false;  // a color space this path leaves to TurboJPEG
  JDIMENSION width = 0, height = 0;
};

// The reading itself, free of objects with destructors: a libjpeg error
// jumps back here and returns false.
bool Run(Job* job, Image* im) {
  const Libjpeg& L = Lib();
  jpeg_decompress_struct* c = &job->cinfo;
  c->err = L.std_error(&job->err.mgr);
  job->err.mgr.error_exit = OnError;
  job->err.mgr.emit_message = OnMessage;
  if (setjmp(job->err.jump)) return false;
  L.create(c, JPEG_LIB_VERSION, sizeof(jpeg_decompress_struct));
  job->created = true;
  L.mem_src(c, job->src, job->size);
  L.read_header(c, TRUE);
  job->width = c->image_width;
  job->height = c->image_height;
  if (c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK) {
    job->unsupported = true;
    return true;
  }
  const ImageRegion& r = job->r;
  if (r.x + r.width > int64_t{c->image_width} || r.y + r.height > int64_t{c->image_height})
    return true;  // the caller reports it, with the sizes
  c->out_color_space = job->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  L.start(c);
  // One column more on each side than asked: at the edges of a crop, libjpeg
  // upsamples chroma as at the image's edges, so a window that starts or
  // ends on an iMCU boundary would differ there from a full decode.
  const int64_t left = std::max<int64_t>(0, r.x - 1);
  const int64_t right = std::min<int64_t>(c->output_width, r.x + r.width + 1);
  JDIMENSION x0 = static_cast<JDIMENSION>(left), cw = static_cast<JDIMENSION>(right - left);
  if (cw < c->output_width) L.crop_scanline(c, &x0, &cw);  // x0 down to an iMCU edge
  if (r.y > 0) L.skip_scanlines(c, static_cast<JDIMENSION>(r.y));
  // Rows go straight into the output, as wide as libjpeg decodes them: the
  // window is a part of it (job->x), with no copy.
  im->height = r.height;
  im->width = cw;
  im->channels = job->channels;
  im->pixels.resize(static_cast<size_t>(r.height) * cw * static_cast<size_t>(job->channels));
  job->x = r.x - x0;
  const size_t row_bytes = static_cast<size_t>(cw) * static_cast<size_t>(job->channels);
  for (int64_t y = 0; y < r.height; ++y) {
    JSAMPROW rows[1] = {im->pixels.data() + static_cast<size_t>(y) * row_bytes};
    if (L.read_scanlines(c, rows, 1) != 1) {  // no suspension from memory: never, but no loop
      std::snprintf(job->err.message, sizeof job->err.message, "the decoder stopped at row %lld",
                    static_cast<long long>(r.y + y));
      return false;
    }
  }
  L.abort(c);  // the rows below the window are never decoded
  return true;
}

}  // namespace

bool DecodeJpegRegion(std::string_view bytes, int channels, const ImageRegion& r,
                      std::string_view what, Image* out, ImageRegion* window) {
  TS_CHECK(r.x >= 0 && r.y >= 0 && r.width >= 1 && r.height >= 1)
      << what << ": an empty or negative window " << r.width << "x" << r.height << " at (" << r.x
      << ", " << r.y << ")";
  auto job = std::make_unique<Job>();
  job->src = reinterpret_cast<const unsigned char*>(bytes.data());
  job->size = static_cast<unsigned long>(bytes.size());
  job->channels = channels;
  job->r = r;
  const bool ok = Run(job.get(), out);
  if (job->created) Lib().destroy(&job->cinfo);
  TS_CHECK(ok) << what << ": corrupt or truncated JPEG: " << job->err.message;
  if (job->unsupported) return false;
  TS_CHECK(r.x + r.width <= int64_t{job->width} && r.y + r.height <= int64_t{job->height})
      << what << ": the window " << r.width << "x" << r.height << " at (" << r.x << ", " << r.y
      << ") is not inside the " << job->width << "x" << job->height << " JPEG";
  *window = {job->x, 0, r.width, r.height};
  return true;
}

}  // namespace tessera::io
