#include "backend/variable.h"

#include "backend/autodiff.h"

namespace keras {

Variable::Variable(Tensor value, std::string path, bool trainable) : impl_(std::make_shared<Impl>()) {
  impl_->value = value.detach().contiguous();
  impl_->path = std::move(path);
  impl_->trainable = trainable;
  impl_->value.set_requires_grad(trainable);
}

Variable::Impl& Variable::impl() const {
  if (!impl_) throw StateError("Variable: expected a defined variable, got an empty handle.");
  return *impl_;
}

const Tensor& Variable::value() const { return impl().value; }
const std::string& Variable::path() const { return impl().path; }
void Variable::set_path(std::string path) { impl().path = std::move(path); }

std::string Variable::name() const {
  const std::string& p = impl().path;
  auto pos = p.rfind('/');
  return pos == std::string::npos ? p : p.substr(pos + 1);
}

bool Variable::trainable() const { return impl().trainable; }

void Variable::set_trainable(bool trainable) {
  impl().trainable = trainable;
  impl().value.set_requires_grad(trainable);
}

void Variable::assign(const Tensor& v) {
  if (v.shape() != shape())
    fail<ShapeError>("Variable '" + path() + "'", "a value of shape " + shape_str(shape()), shape_str(v.shape()));
  impl().value.copy_from(v.astype(dtype()));
}

void Variable::set_constraint(ConstraintFn constraint) { impl().constraint = std::move(constraint); }
bool Variable::has_constraint() const { return static_cast<bool>(impl().constraint); }

void Variable::apply_constraint() {
  if (!impl().constraint) return;
  NoGradGuard no_grad;  // the projection is part of the update, never of a gradient
  Tensor projected = impl().constraint(impl().value);
  if (!projected.defined())
    fail<ValueError>("Variable '" + path() + "' constraint", "a tensor", "an undefined one");
  if (projected.shape() != shape())
    fail<ShapeError>("Variable '" + path() + "' constraint", "a value of shape " + shape_str(shape()),
                     shape_str(projected.shape()), "A constraint must keep the weight's shape.");
  // An identity projection hands back the value itself: nothing to copy.
  const Tensor& value = impl().value;
  if (projected.impl().storage == value.impl().storage && projected.strides() == value.strides() &&
      projected.raw_data() == value.raw_data())
    return;
  assign(projected);
}

}  // namespace keras
