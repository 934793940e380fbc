// A vector that keeps up to N elements inline: the engine's per-op variable
// lists are almost always short, and the push path must not call malloc.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");

 public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> init) {
    for (const T& v : init) push_back(v);
  }
  template <typename It>
  SmallVector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  SmallVector(const SmallVector& o) { *this = o; }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      for (const T& v : o) push_back(v);
    }
    return *this;
  }

  void push_back(const T& v) {
    if (size_ < N)
      inline_[size_++] = v;
    else
      PushToHeap(v);
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ > N ? heap_.data() : inline_; }
  const T* data() const { return size_ > N ? heap_.data() : inline_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  // Out of line, so that the common push inlines into its callers.
  [[gnu::noinline]] void PushToHeap(const T& v) {
    if (size_ == N) heap_.assign(inline_, inline_ + N);
    heap_.push_back(v);
    ++size_;
  }

  T inline_[N];
  size_t size_ = 0;
  std::vector<T> heap_;  // holds every element once size_ > N
};

}  // namespace tessera
