// FloatArena: many float arrays carved out of one backend allocation. Sizes are declared first
// (take), then allocate() assigns every registered pointer; each array starts on a 64-byte
// boundary. One allocation per activation set keeps the peak memory predictable.
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
  // Frees any previous block, allocates a zeroed one and fills every registered slot.
  void allocate() {
    be_->free_floats(base_);
    base_ = be_->alloc_floats(size_);
    for (auto& [slot, offset] : requests_) *slot = base_ + offset;
  }
  size_t size() const { return size_; }

 private:
  backend::Backend* be_;
  std::vector<std::pair<float**, size_t>> requests_;
  size_t size_ = 0;
  float* base_ = nullptr;
};

}  // namespace leap::model
