#include "ops/custom/rtc.h"

#include <dlfcn.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "engine/base/error.h"
#include "engine/base/shared_library.h"
#include "engine/scheduler/engine.h"

namespace tessera::op {
namespace {

// ---- NVRTC and the driver, opened on first use.
//
// Declared here with the C ABI both libraries export, so the compiling half
// builds without the CUDA headers.
using nvrtcProgram = struct NvrtcProgram*;

#define TS_NVRTC_FUNCTIONS(X)                                                                  \
  X(create, nvrtcCreateProgram,                                                                \
    int(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*)) \
  X(destroy, nvrtcDestroyProgram, int(nvrtcProgram*))                                          \
  X(compile, nvrtcCompileProgram, int(nvrtcProgram, int, const char* const*))                  \
  X(ptx_size, nvrtcGetPTXSize, int(nvrtcProgram, size_t*))                                     \
  X(ptx, nvrtcGetPTX, int(nvrtcProgram, char*))                                                \
  X(log_size, nvrtcGetProgramLogSize, int(nvrtcProgram, size_t*))                              \
  X(log, nvrtcGetProgramLog, int(nvrtcProgram, char*))                                         \
  X(add_name, nvrtcAddNameExpression, int(nvrtcProgram, const char*))                          \
  X(lowered_name, nvrtcGetLoweredName, int(nvrtcProgram, const char*, const char**))           \
  X(error_string, nvrtcGetErrorString, const char*(int))

struct Nvrtc {
  TS_LIBRARY_FUNCTIONS_SIGNED(TS_NVRTC_FUNCTIONS)
};

#define TS_CUDA_DRIVER_FUNCTIONS(X)                                                         \
  X(module_load_data, cuModuleLoadData, int(void**, const void*))                           \
  X(module_get_function, cuModuleGetFunction, int(void**, void*, const char*))              \
  X(launch_kernel, cuLaunchKernel,                                                          \
    int(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, \
        void**, void**))                                                                    \
  X(error_string, cuGetErrorString, int(int, const char**))

struct CudaDriver {
  TS_LIBRARY_FUNCTIONS_SIGNED(TS_CUDA_DRIVER_FUNCTIONS)
};

void* OpenFirst(const std::vector<std::string>& paths, std::string* tried) {
  for (const std::string& p : paths) {
    if (void* lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    *tried += (tried->empty() ? "" : ", ") + p;
  }
  return nullptr;
}

Nvrtc OpenNvrtc() {
  std::vector<std::string> paths;
  if (const char* chosen = std::getenv("TESSERA_NVRTC_LIBRARY"); chosen && *chosen)
    paths.push_back(chosen);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root)
      paths.push_back(std::string(root) + "/lib64/libnvrtc.so");
  for (const char* p :
       {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"})
    paths.push_back(p);
  std::string tried;
  void* lib = OpenFirst(paths, &tried);
  TS_CHECK(lib) << "mx.rtc: cannot open NVRTC (tried " << tried
                << "); install the CUDA toolkit, or set TESSERA_NVRTC_LIBRARY or CUDA_HOME";
  Nvrtc api;
  api.Bind(lib, "the NVRTC library opened");
  return api;
}

const Nvrtc& NvrtcApi() {
  static const Nvrtc api = OpenNvrtc();  // a throw leaves it unset: the next call retries
  return api;
}

const CudaDriver& Driver() {
  static const CudaDriver api = [] {
    std::string tried;
    void* lib = OpenFirst({"libcuda.so.1", "libcuda.so"}, &tried);
    TS_CHECK(lib) << "mx.rtc: cannot open the CUDA driver (" << tried << ")";
    CudaDriver d;
    d.Bind(lib, "the CUDA driver library opened");
    return d;
  }();
  return api;
}

void CheckNvrtc(int rc, const char* call) {
  TS_CHECK(rc == 0) << "mx.rtc: " << call << " failed: " << NvrtcApi().error_string(rc);
}

void CheckDriver(int rc, const std::string& what) {
  if (rc == 0) return;
  const char* text = nullptr;
  Driver().error_string(rc, &text);
  TS_THROW << "mx.rtc: " << what << ": " << (text ? text : "CUDA error ") << " (" << rc << ")";
}

// ---- signatures

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

const std::map<std::string, DType>& CTypes() {
  static const std::map<std::string, DType> types = {{"float", DType::kFloat32},
                                                     {"double", DType::kFloat64},
                                                     {"half", DType::kFloat16},
                                                     {"__half", DType::kFloat16},
                                                     {"int", DType::kInt32},
                                                     {"int32_t", DType::kInt32},
                                                     {"int64_t", DType::kInt64},
                                                     {"long long", DType::kInt64},
                                                     {"unsigned char", DType::kUint8},
                                                     {"uint8_t", DType::kUint8},
                                                     {"int8_t", DType::kInt8},
                                                     {"char", DType::kInt8},
                                                     {"signed char", DType::kInt8},
                                                     {"bool", DType::kBool},
                                                     {"__nv_bfloat16", DType::kBFloat16}};
  return types;
}

RtcParam ParseParam(const std::string& text, size_t index) {
  std::string s = Trim(text);
  RtcParam p;
  auto fail = [&](const char* why) {
    TS_THROW << "mx.rtc: kernel signature: parameter " << index + 1 << " '" << s << "' " << why
             << " (expected a type from "
             << "float, double, half, int, int32_t, int64_t, "
             << "long long, int8_t, uint8_t, unsigned char, char, bool, __nv_bfloat16, "
             << "optionally const and one '*', then a name)";
  };
  if (s.empty()) fail("is empty");
  const size_t star = s.find('*');
  if (star != std::string::npos) {
    if (s.find('*', star + 1) != std::string::npos) fail("has more than one '*'");
    p.pointer = true;
    s[star] = ' ';
  }
  std::istringstream words(s);
  std::vector<std::string> w;
  for (std::string t; words >> t;) w.push_back(t);
  if (w.size() < 2) fail("has no name");
  p.name = w.back();
  w.pop_back();
  for (char c : p.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') fail("has no valid name");
  std::string type;
  for (const std::string& t : w) {
    if (t == "const") {
      p.is_const = true;
      continue;
    }
    if (t == "__restrict__" || t == "volatile") continue;
    type += (type.empty() ? "" : " ") + t;
  }
  auto it = CTypes().find(type);
  if (it == CTypes().end()) fail("has an unknown type");
  p.dtype = it->second;
  if (p.is_const && !p.pointer) p.is_const = false;  // a const scalar is a scalar
  return p;
}

// The bytes of a number passed to a scalar parameter.
struct ScalarBytes {
  alignas(8) unsigned char b[8] = {};
};

// A whole number within [lo, hi] as T; anything else is an error naming `arg`
// (a cast of an out-of-range double is undefined).
template <typename T>
T WholeIn(double v, double lo, double hi, const std::string& arg) {
  TS_CHECK(v == std::floor(v) && v >= lo && v <= hi)
      << arg << " is " << v << "; the kernel takes a whole number in [" << lo << ", " << hi << "]";
  return static_cast<T>(v);
}

ScalarBytes ToScalar(double v, DType t, const std::string& arg) {
  ScalarBytes s;
  auto put = [&](auto x) { std::memcpy(s.b, &x, sizeof x); };
  switch (t) {
    case DType::kFloat32:
      put(static_cast<float>(v));
      break;
    case DType::kFloat64:
      put(v);
      break;
    case DType::kInt32:
      put(WholeIn<int32_t>(v, -2147483648.0, 2147483647.0, arg));
      break;
    case DType::kInt64:  // doubles hold whole numbers exactly up to 2^53
      put(WholeIn<int64_t>(v, -9007199254740992.0, 9007199254740992.0, arg));
      break;
    case DType::kInt8:
      put(WholeIn<int8_t>(v, -128, 127, arg));
      break;
    case DType::kUint8:
      put(WholeIn<uint8_t>(v, 0, 255, arg));
      break;
    case DType::kBool:
      put(static_cast<bool>(v != 0));
      break;
    default:
      TS_THROW << arg << ": a scalar parameter of type " << DTypeName(t)
               << " cannot be passed from a number; pass it through an array";
  }
  return s;
}

}  // namespace

std::vector<RtcParam> ParseRtcSignature(const std::string& signature) {
  std::vector<RtcParam> params;
  const std::string s = Trim(signature);
  if (s.empty() || s == "void") return params;
  size_t begin = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      params.push_back(ParseParam(s.substr(begin, i - begin), params.size()));
      begin = i + 1;
    }
  }
  return params;
}

// ---- modules

struct RtcModule::State {
  std::string ptx;
  std::map<std::string, std::string> lowered;  // exported name -> mangled name
  std::mutex mu;
  std::map<int, void*> loaded;                             // device -> CUmodule
  std::map<std::pair<int, std::string>, void*> functions;  // (device, name) -> CUfunction

  // The kernel on the device whose context is current on this thread.
  void* Function(int device, const std::string& lowered_name) {
    std::lock_guard<std::mutex> lock(mu);
    auto f = functions.find({device, lowered_name});
    if (f != functions.end()) return f->second;
    void*& mod = loaded[device];
    if (!mod)
      CheckDriver(Driver().module_load_data(&mod, ptx.c_str()),
                  "loading the module on gpu(" + std::to_string(device) + ")");
    void* fn = nullptr;
    CheckDriver(Driver().module_get_function(&fn, mod, lowered_name.c_str()),
                "no kernel '" + lowered_name + "' in the module");
    functions[{device, lowered_name}] = fn;
    return fn;
  }
};

RtcModule::RtcModule(const std::string& source, const std::vector<std::string>& options,
                     const std::vector<std::string>& exports)
    : state_(std::make_shared<State>()) {
  const Nvrtc& nv = NvrtcApi();
  nvrtcProgram prog = nullptr;
  CheckNvrtc(nv.create(&prog, source.c_str(), "mx_rtc.cu", 0, nullptr, nullptr),
             "nvrtcCreateProgram");
  struct Destroy {
    const Nvrtc& nv;
    nvrtcProgram* p;
    ~Destroy() { nv.destroy(p); }
  } destroy{nv, &prog};
  for (const std::string& e : exports)
    CheckNvrtc(nv.add_name(prog, e.c_str()), "nvrtcAddNameExpression");
  std::vector<const char*> opts;
  for (const std::string& o : options) opts.push_back(o.c_str());
  const int rc = nv.compile(prog, static_cast<int>(opts.size()), opts.data());
  if (rc != 0) {
    size_t n = 0;
    nv.log_size(prog, &n);
    std::string log(n, '\0');
    if (n) nv.log(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    TS_THROW << "mx.rtc.CudaModule: NVRTC could not compile the source (" << nv.error_string(rc)
             << "):\n"
             << log;
  }
  size_t n = 0;
  CheckNvrtc(nv.ptx_size(prog, &n), "nvrtcGetPTXSize");
  state_->ptx.assign(n, '\0');
  CheckNvrtc(nv.ptx(prog, state_->ptx.data()), "nvrtcGetPTX");
  while (!state_->ptx.empty() && state_->ptx.back() == '\0') state_->ptx.pop_back();
  for (const std::string& e : exports) {
    const char* lowered = nullptr;
    CheckNvrtc(nv.lowered_name(prog, e.c_str(), &lowered), "nvrtcGetLoweredName");
    state_->lowered[e] = lowered;
  }
}

RtcModule::~RtcModule() = default;

const std::string& RtcModule::ptx() const {
  return state_->ptx;
}

RtcKernel RtcModule::GetKernel(const std::string& name, const std::string& signature) const {
  std::vector<RtcParam> params = ParseRtcSignature(signature);
  auto it = state_->lowered.find(name);
  std::string lowered = it != state_->lowered.end() ? it->second : name;
  // An unexported name must be an extern "C" kernel: its PTX entry is the name.
  TS_CHECK(it != state_->lowered.end() ||
           state_->ptx.find(".entry " + name + "(") != std::string::npos)
      << "mx.rtc: the module has no kernel '" << name
      << "' (a kernel not declared extern \"C\" must be listed in exports)";
  return RtcKernel(state_, name, std::move(lowered), std::move(params));
}

// ---- launches

void RtcKernel::Launch(const std::vector<RtcArg>& args, Context ctx, std::array<unsigned, 3> grid,
                       std::array<unsigned, 3> block, unsigned shared_mem) const {
  const std::string label = "mx.rtc kernel '" + name_ + "'";
  TS_CHECK(ctx.is_gpu()) << label << ": launched on " << ctx.ToString()
                         << "; CUDA kernels run on a GPU context";
  TS_CHECK(args.size() == params_.size())
      << label << ": " << args.size() << " arguments for " << params_.size() << " parameters";
  for (unsigned d : grid) TS_CHECK(d >= 1) << label << ": grid dimensions must be >= 1";
  for (unsigned d : block) TS_CHECK(d >= 1) << label << ": block dimensions must be >= 1";
  std::vector<engine::VarHandle> reads, writes;
  std::vector<NDArray> arrays;
  std::vector<ScalarBytes> scalars;
  for (size_t i = 0; i < args.size(); ++i) {
    const RtcParam& p = params_[i];
    const std::string arg = label + ": argument " + std::to_string(i + 1) + " (" + p.name + ")";
    if (p.pointer) {
      const NDArray* a = std::get_if<NDArray>(&args[i]);
      TS_CHECK(a && !a->is_none()) << arg << " must be an array";
      TS_CHECK(a->dtype() == p.dtype)
          << arg << " is " << DTypeName(a->dtype()) << ", the kernel takes " << DTypeName(p.dtype);
      TS_CHECK(a->ctx() == ctx) << arg << " is on " << a->ctx().ToString() << ", the launch on "
                                << ctx.ToString();
      (p.is_const ? reads : writes).push_back(a->var());
      arrays.push_back(*a);
    } else {
      const double* v = std::get_if<double>(&args[i]);
      TS_CHECK(v) << arg << " must be a number";
      scalars.push_back(ToScalar(*v, p.dtype, arg));
    }
  }
  auto module = module_;
  auto params = params_;
  std::string lowered = lowered_;
  engine::Engine::Get()->PushSync(
      [module, params, lowered, arrays, scalars, grid, block, shared_mem](RunContext rctx) {
        void* fn = module->Function(rctx.ctx.dev_id, lowered);
        std::vector<void*> ptrs(arrays.size());
        std::vector<void*> slots;
        size_t a = 0, s = 0;
        for (const RtcParam& p : params) {
          if (p.pointer) {
            ptrs[a] = arrays[a].data().dptr_;
            slots.push_back(&ptrs[a++]);
          } else {
            slots.push_back(const_cast<unsigned char*>(scalars[s++].b));
          }
        }
        CheckDriver(
            Driver().launch_kernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   shared_mem, rctx.stream, slots.data(), nullptr),
            "launching '" + lowered + "'");
      },
      ctx, reads, writes, engine::FnProperty::kNormal, 0, "rtc_kernel");
}

}  // namespace tessera::op
