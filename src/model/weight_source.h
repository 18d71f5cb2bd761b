// WeightSource: where a forward reads its weights, one piece at a time in the forward's order:
// the embedding, layers 0 .. L-1, then the final norm and the LM head. A source may keep its
// weights in another form and produce each piece only when asked: the bf16 KL reference
// (reference_policy.h) widens one layer at a time into one fp32 scratch, so that a frozen copy of
// a 7B model costs its bf16 bytes and not its fp32 ones. Transformer::forward_with runs over one.
#pragma once

#include "model/parameters.h"

namespace leap::model {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Pointers are backend memory, laid out as the views say, and stay valid until the next call.
  virtual const float* embedding() = 0;  // wte (V, C)
  virtual LayerViews layer(int l) = 0;   // layer l's tensors
  virtual RestViews head() = 0;          // lnf and lm_head (wte need not be valid here)
};

// The weights of a flat buffer laid out by `layout` (the policy's own, or a full fp32 copy).
class FlatWeights final : public WeightSource {
 public:
  FlatWeights(const ParameterLayout& layout, const float* base)
      : layout_(&layout), views_(layout.views(const_cast<float*>(base))) {}
  const float* embedding() override { return views_.wte; }
  LayerViews layer(int l) override { return layout_->layer_views(views_, l); }
  RestViews head() override { return {views_.wte, views_.lm_head, views_.lnf}; }

 private:
  const ParameterLayout* layout_;
  ParameterViews views_;  // read only: the views are float* for the layout's sake
};

}  // namespace leap::model
