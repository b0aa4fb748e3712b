// Variable: a named, mutable model weight (keras.Variable). Its value is a leaf tensor that
// requires a gradient exactly when the variable is trainable, so a frozen variable records
// nothing on the tape. Optimizers update it in place (through registered in-place ops), which
// bumps the storage version that weight caches key on.
//
// A variable may carry a constraint (Keras's variable.constraint): a projection the optimizer
// applies right after each update of the variable. It is a plain function so that backend/
// knows nothing of the layers' constraint classes.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "backend/tensor.h"

namespace keras {

class Variable {
 public:
  Variable() = default;
  // `path` is the variable's stable identity ("dense_1/kernel"); `value` is taken over (not copied).
  Variable(Tensor value, std::string path, bool trainable = true);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& value() const;  // the live leaf tensor; use it in ops
  const std::string& path() const;
  void set_path(std::string path);
  // Last path component ("kernel").
  std::string name() const;
  bool trainable() const;
  void set_trainable(bool trainable);
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  // Copies `v` (same shape; dtype converted) into the variable. ShapeError names the path.
  void assign(const Tensor& v);
  // The projection run after each optimizer update: returns the new value (same shape). Empty: none.
  using ConstraintFn = std::function<Tensor(const Tensor&)>;
  void set_constraint(ConstraintFn constraint);
  bool has_constraint() const;
  // value = constraint(value), not recorded on any tape; a no-op without a constraint.
  // ShapeError naming the path when the constraint returns another shape.
  void apply_constraint();
  bool same(const Variable& other) const { return impl_ == other.impl_; }
  const void* id() const { return impl_.get(); }

 private:
  struct Impl {
    Tensor value;
    std::string path;
    bool trainable = true;
    ConstraintFn constraint;
  };
  Impl& impl() const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace keras
