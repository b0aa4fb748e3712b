#include "backend/variable.h"

#include "backend/autodiff.h"
#include "backend/ops.h"

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

Tensor Variable::value() const {
  const Impl& im = impl();
  return im.autocast ? AutocastScope::cast(impl_.get(), im.value) : im.value;
}
bool Variable::autocast() const { return impl().autocast; }
void Variable::set_autocast(bool autocast) { impl().autocast = autocast; }
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

void Variable::swap_value(Tensor& t) {
  if (t.shape() != shape())
    fail<ShapeError>("Variable '" + path() + "' swap_value", "a tensor of shape " + shape_str(shape()), shape_str(t.shape()));
  std::swap(impl().value, t);
}

void Variable::set_constraint(ConstraintFn constraint) { impl().constraint = std::move(constraint); }
bool Variable::has_constraint() const { return static_cast<bool>(impl().constraint); }

void Variable::apply_constraint() {
  if (!impl().constraint) return;
  NoGradGuard no_grad;  // the projection is part of the update, never of a gradient
  Tensor projected = impl().constraint(impl().value);  // the stored value, never autocast
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

namespace {
thread_local AutocastScope* t_scope = nullptr;
}  // namespace

AutocastScope::AutocastScope(std::optional<DType> dtype) : dtype_(dtype), previous_(t_scope) { t_scope = this; }
AutocastScope::~AutocastScope() { t_scope = previous_; }

Tensor AutocastScope::cast(const void* variable_id, const Tensor& value) {
  AutocastScope* s = t_scope;
  if (!s || !s->dtype_ || value.dtype() != DType::float32) return value;
  for (const auto& c : s->casts_)  // an assignment since (stateful states) makes a new cast
    if (c.variable == variable_id && c.version == value.version()) return c.value;
  Tensor t = ops::cast(value, *s->dtype_);
  s->casts_.push_back({variable_id, value.version(), t});
  return t;
}

}  // namespace keras
