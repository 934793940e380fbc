// A scratch directory for a test, removed with everything in it when the
// test ends. Each one is new: the process id and a count in its name.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "tessera_test") {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  // The names of the files in it, sorted.
  std::vector<std::string> Files() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tessera::test
