// Variable: a named, mutable model weight (keras.Variable). Its value is a leaf tensor that
// requires a gradient exactly when the variable is trainable, so a frozen variable records
// nothing on the tape. Optimizers update it in place (through registered in-place ops), which
// bumps the storage version that weight caches key on.
//
// A variable may carry a constraint (Keras's variable.constraint): a projection the optimizer
// applies right after each update of the variable. It is a plain function so that backend/
// knows nothing of the layers' constraint classes.
//
// Autocasting (Keras's AutocastScope): while an AutocastScope with a dtype is active on a thread,
// value() of a float32 variable whose autocast flag is set returns the value cast to that dtype;
// the cast is on the tape, so gradients still reach the float32 variable. Layers open one around
// their call under a mixed policy. Each variable is cast once per scope.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace keras {

class Variable {
 public:
  Variable() = default;
  // `path` is the variable's stable identity ("dense_1/kernel"); `value` is taken over (not copied).
  Variable(Tensor value, std::string path, bool trainable = true);

  bool defined() const { return impl_ != nullptr; }
  // The live leaf tensor (use it in ops), or its cast inside an AutocastScope (see above).
  Tensor value() const;
  // Whether AutocastScopes cast this variable (default true; normalization layers, which compute
  // in float32 under any policy as Keras's do, turn it off).
  bool autocast() const;
  void set_autocast(bool autocast);
  const std::string& path() const;
  void set_path(std::string path);
  // Last path component ("kernel").
  std::string name() const;
  bool trainable() const;
  void set_trainable(bool trainable);
  const Shape& shape() const { return impl().value.shape(); }
  DType dtype() const { return impl().value.dtype(); }  // the stored dtype, never the autocast one
  // Copies `v` (same shape; dtype converted) into the variable. ShapeError names the path.
  void assign(const Tensor& v);
  // Exchanges the stored tensor with `t` without copying (same shape, else ShapeError naming the
  // path; the dtype may differ): gradient checks make a layer compute with their own tensors
  // (float64 ones too) this way, and swap back.
  void swap_value(Tensor& t);
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
    bool autocast = true;
    ConstraintFn constraint;
  };
  Impl& impl() const;
  std::shared_ptr<Impl> impl_;
};

// See the file comment. nullopt: no casting inside the scope (a float32 layer inside a mixed one).
class AutocastScope {
 public:
  explicit AutocastScope(std::optional<DType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;
  // The cast of a float32 value into the innermost scope's dtype, or `value` itself.
  static Tensor cast(const void* variable_id, const Tensor& value);

 private:
  struct Cast {
    const void* variable;
    uint64_t version;
    Tensor value;
  };
  std::optional<DType> dtype_;
  std::vector<Cast> casts_;
  AutocastScope* previous_;
};

}  // namespace keras
