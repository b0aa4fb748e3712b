// Layer handles: what users write. `keras::layers::Dense({.units = 10})` is a cheap shared handle
// over a DenseImpl (as the PyTorch C++ frontend's module holders). A handle converts to LayerPtr,
// is callable on tensors and KerasTensors, and `->` reaches the implementation.
#pragma once
#include <memory>

#include "layers/layer.h"

namespace keras {

template <class Impl>
class LayerHandle {
 public:
  explicit LayerHandle(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator LayerPtr() const { return impl_; }
  template <class Arg>
  auto operator()(Arg&& x, CallArgs args = {}) const {
    return (*impl_)(std::forward<Arg>(x), args);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

// Declares handle `Name` over `Name##Impl`, constructed from `Options` (designated initialisers).
#define KERAS_LAYER_HANDLE(Name, Options)                                                   \
  class Name : public ::keras::LayerHandle<Name##Impl> {                                  \
   public:                                                                                \
    Name(Options options = {}) : LayerHandle(std::make_shared<Name##Impl>(std::move(options))) {} \
    explicit Name(std::shared_ptr<Name##Impl> impl) : LayerHandle(std::move(impl)) {}     \
  }

}  // namespace keras
