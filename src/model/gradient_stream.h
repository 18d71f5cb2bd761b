// GradientStream: where Transformer::backward() hands its gradient over when the gradient is not
// kept whole (ZeRO stage 2, mpi/zero_gradients.h). Without a stream, backward() adds into the
// flat gradient buffer of every parameter. With one, the model holds two compact buffers instead
// (parameters.h: one layer's tensors, and the tensors outside the layers): each layer's backward
// writes into a layer buffer, which goes to layer_done() as soon as that layer is finished
// (layers L-1 down to 0), and the embedding, LM head and final norm collect in the rest buffer,
// which goes to rest_done() when backward() returns. The receiver sums them where it keeps them
// (its shard). layer_done() hands back the zeroed buffer the next layer writes: the same one, or
// one of the receiver's own while the layer just handed over is still being sent, so that sending
// a layer overlaps the next layer's backward. When rest_done() returns, nothing is in flight.
#pragma once

namespace leap::model {

class GradientStream {
 public:
  virtual ~GradientStream() = default;
  // Transformer::set_gradient_stream(this): the model writes its own layer buffer next. Buffers
  // of the stream's own that the model held before are the stream's again (all zero: nothing is in
  // flight between backward passes).
  virtual void attach() {}
  // Transformer::zero_grad(): a new optimizer step starts; whatever was summed is dropped.
  virtual void clear() = 0;
  // Layer l's gradient of one backward, in the compact layer layout (backend memory). Returns the
  // all-zero buffer (layer_floats(), valid while this stream is set) for the next layer's.
  virtual float* layer_done(int l, float* layer_grads) = 0;
  // The rest's gradient of one backward, in the compact rest layout; the receiver leaves it all
  // zero, and finishes whatever it still had in flight.
  virtual void rest_done(float* rest_grads) = 0;
};

}  // namespace leap::model
