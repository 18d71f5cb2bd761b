// GradientStream: where Transformer::backward() hands its gradient over when the gradient is not
// kept whole (ZeRO stage 2, mpi/zero_gradients.h). Without a stream, backward() adds into the
// flat gradient buffer of every parameter. With one, the model holds two compact buffers instead
// (parameters.h: one layer's tensors, and the tensors outside the layers): each layer's backward
// writes into the layer buffer, which goes to layer_done() as soon as that layer is finished
// (layers L-1 down to 0), and the embedding, LM head and final norm collect in the rest buffer,
// which goes to rest_done() when backward() returns. The receiver sums them where it keeps them
// (its shard) and leaves the buffer zeroed for the next layer or micro-batch.
#pragma once

namespace leap::model {

class GradientStream {
 public:
  virtual ~GradientStream() = default;
  // Transformer::zero_grad(): a new optimizer step starts; whatever was summed is dropped.
  virtual void clear() = 0;
  // Layer l's gradient of one backward, in the compact layer layout (backend memory). The
  // receiver must leave it all zero.
  virtual void layer_done(int l, float* layer_grads) = 0;
  // The rest's gradient of one backward, in the compact rest layout; left all zero likewise.
  virtual void rest_done(float* rest_grads) = 0;
};

}  // namespace leap::model
