// FloatArena: many float arrays carved out of one backend allocation. Sizes are declared first
// (take), then allocate() assigns every registered pointer; each array starts on a 64-byte
// boundary. One allocation per activation set keeps the peak memory predictable, and a new
// layout (reset, take..., allocate) reuses the block when it is big enough, so batches of
// varying shape do not reallocate every time. Contents are not preserved across layouts.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace leap::model {

class FloatArena {
 public:
  explicit FloatArena(backend::Backend& be) : be_(&be) {}
  ~FloatArena() { be_->free_floats(base_); }
  FloatArena(const FloatArena&) = delete;
  FloatArena& operator=(const FloatArena&) = delete;

  // Registers *slot to receive n floats at allocate().
  void take(float** slot, size_t n) {
    requests_.emplace_back(slot, size_);
    size_ += (n + 15) / 16 * 16;
  }
  // Grows the block if the registered arrays do not fit, then fills every registered slot.
  void allocate() {
    if (size_ > capacity_) {
      be_->free_floats(base_);
      base_ = be_->alloc_floats(size_);
      capacity_ = size_;
    }
    for (auto& [slot, offset] : requests_) *slot = base_ + offset;
  }
  // Forgets the registered arrays (the block is kept for the next layout).
  void reset() {
    requests_.clear();
    size_ = 0;
  }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

 private:
  backend::Backend* be_;
  std::vector<std::pair<float**, size_t>> requests_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  float* base_ = nullptr;
};

}  // namespace leap::model
