// Inference-time folding of Conv2D / DepthwiseConv2D -> BatchNormalization (-> ReLU) chains in a
// functional graph.
//
// In inference mode BatchNormalization is a per-channel affine map, y = x * s + t with
//   s = gamma / sqrt(moving_variance + epsilon),  t = beta - moving_mean * s,
// so a convolution whose output only that layer reads gives the same values with kernel * s and
// bias * s + t (a depthwise kernel (kh, kw, C, m) scaled per output channel c * m + j), and a ReLU
// or ReLU6 (MobileNetV2's ReLU(max_value=6)) that only reads the normalized output becomes the
// convolution's fused activation: one convolution instead of three passes over the activations
// (TensorFlow folds frozen graphs the same way). Results agree with the unfolded chain to float32
// rounding. ResNet's block end, Conv -> BatchNormalization -> Add(residual) -> ReLU, folds the same
// way into one ops::conv2d_add (the residual added inside the convolution, then the activation)
// where the residual is at hand when the convolution runs (CPU only, keras/models/functional.cpp;
// under mixed_bfloat16 in bfloat16, rounded once where the layers round after the conv and the
// Add: the two agree to bfloat16 rounding).
//
// Folding is used only when the BatchNormalization call runs in inference mode and the chain needs
// no gradients: none are recorded (predict, evaluate, calls outside a tape), or the chain is frozen
// and its input needs none (a frozen backbone under a trainable head in fit). So training,
// moving-statistic updates and gradients of anything in or before the chain are untouched.
// The folded kernel and bias are cached and rebuilt when any of the variables changes (storage
// identity and version), e.g. after a training step or load_weights.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace keras::detail {

// The activation a ReLU layer amounts to: "relu", "relu6" (max_value 6; MobileNetV2's), or ""
// when it has other options or `layer` is another layer. An Activation("relu" / "relu6") counts.
std::string fused_relu_of(const Layer& layer);

class ConvBnFold {
 public:
  // A fold of `conv` into `bn` (and `relu`, which may be null) when the layers qualify: Conv2D or
  // DepthwiseConv2D with channels_last data and a linear activation, BatchNormalization, and a
  // ReLU layer without options or with only max_value 6, or an Activation("relu") or ("relu6")
  // (another `relu` layer stays unfolded). nullopt otherwise (never throws).
  static std::optional<ConvBnFold> match(const LayerPtr& conv, const LayerPtr& bn, const LayerPtr& relu);
  // This fold with the activation `relu` amounts to as match() reads it (none for null) in place
  // of its own, sharing the folded weights.
  ConvBnFold with_activation_of(const LayerPtr& relu) const;

  // Whether this call on `x` may fold: folding enabled, both layers built, `bn_training` (the
  // training flag the BatchNormalization call would get) false or the layer frozen, and no
  // gradient wanted for x or for the chain's weights.
  bool applies(bool bn_training, const Tensor& x) const;
  // x (N, H, W, C) -> the chain's output, with the folded weights. With `residual` (of the
  // output's shape and dtype, on the CPU): act(conv + residual), the chain's activation applied
  // after the residual as the Add -> ReLU it replaces.
  Tensor run(const Tensor& x, const Tensor& residual = Tensor()) const;
  // The folded kernel and bias (cached like run's): a Conv2D's kernel keeps its layout
  // (kh, kw, in / groups, out); a depthwise kernel (kh, kw, C, m) comes as the grouped
  // (kh, kw, 1, C * m). Also what the ONNX exporter writes.
  std::pair<Tensor, Tensor> folded_weights() const;
  bool folds_relu() const { return activation_ != "linear"; }

 private:
  using Key = std::vector<std::pair<const void*, uint64_t>>;
  Key current_key() const;
  // Refolds into cache_ when a variable changed; cache_->mutex held.
  void refresh_locked() const;
  // folded_weights() in `dtype` (the convolution's compute dtype), the cast cached beside them.
  std::pair<Tensor, Tensor> weights_in(DType dtype) const;

  LayerPtr conv_, bn_;
  bool depthwise_ = false;
  std::string activation_ = "linear";  // the folded ReLU: "relu", "relu6" or none
  struct Cache {
    std::mutex mutex;
    Key key;
    Tensor kernel, bias;
    Tensor cast_kernel, cast_bias;  // in the convolution's compute dtype when it is not float32
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

}  // namespace keras::detail

namespace keras {
// Folding is on by default; off runs every layer as written (e.g. to compare the rounding).
void set_conv_bn_folding(bool enabled);
bool conv_bn_folding();
}  // namespace keras
