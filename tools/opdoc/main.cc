// opdoc: writes the operator reference generated from the registry.
//   opdoc                  print it
//   opdoc --write FILE     write it to FILE (through a temporary and a rename)
//   opdoc --check FILE     exit 1, saying where, when FILE differs from it
// The operator table's GPU column comes from the registry in a CUDA build; a
// build without CUDA keeps the column FILE has (CI's CUDA build checks it).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tools/opdoc/operator_doc.h"

namespace {

int Usage() {
  std::cerr << "usage: opdoc [--write FILE | --check FILE]\n";
  return 2;
}

int Write(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) {
      std::cerr << "opdoc: cannot write " << tmp << "\n";
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::cerr << "opdoc: cannot rename " << tmp << " to " << path << ": " << ec.message() << "\n";
    return 1;
  }
  return 0;
}

int Check(const std::string& path, const std::string& text) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::cerr << "opdoc: " << path << " is missing; generate it with the operator_docs target\n";
    return 1;
  }
  std::stringstream buf;
  buf << f.rdbuf();
  const std::string current = buf.str();
  if (current == text) return 0;
  std::istringstream a(current), b(text);
  std::string la, lb;
  int line = 1;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga || !gb || la != lb) {
      std::cerr << "opdoc: " << path << " is stale (first difference at line " << line
                << ")\n  file:      " << (ga ? la : "(end of file)")
                << "\n  generated: " << (gb ? lb : "(end of text)")
                << "\nregenerate it: cmake --build <build dir> --target operator_docs\n";
      return 1;
    }
    ++line;
  }
}

// The file's text, or "" when it cannot be read.
std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream buf;
  if (f) buf << f.rdbuf();
  return buf.str();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 1 && argc != 3) return Usage();
    // A build without CUDA keeps the GPU column the file recorded.
    const std::string text = tessera::opdoc::RenderOperatorReference(
        tessera::opdoc::RecordedGpuCells(argc == 3 ? ReadAll(argv[2]) : std::string()));
    if (argc == 1) {
      std::cout << text;
      return 0;
    }
    const std::string mode = argv[1];
    if (mode == "--write") return Write(argv[2], text);
    if (mode == "--check") return Check(argv[2], text);
    return Usage();
  } catch (const std::exception& e) {
    std::cerr << "opdoc: " << e.what() << "\n";
    return 1;
  }
}
