// Where a model's variables and batches live: Model::to / Model::device and the one function
// that moves a batch to the model's device (place_batch). Keeping the crossing in one function
// leaves room for overlapping it with compute later (pinned staging buffers, a copy stream)
// without touching the training loop.
#include "keras/models/batch_source.h"
#include "keras/models/train_state.h"

namespace keras {

namespace {
// The optimizer's step counter and float learning rate are read and written on the host by
// design (Optimizer::iterations); only the slots follow the weights.
bool is_optimizer_host_state(const optimizers::Optimizer& opt, const Variable& v) {
  return v.path() == opt.name() + "/iteration" || v.path() == opt.name() + "/learning_rate";
}

Tensor place(const Tensor& t, Device device, const std::string& where, const std::string& what) {
  if (!t.defined() || t.device() == device) return t;
  // Host data moves silently, as Keras moves NumPy input; a tensor on another accelerator is
  // almost always a mistake in the user's placement, so it is not copied behind their back.
  if (t.device() == Device::cpu()) return t.to(device);
  fail<DeviceError>(where,
                    what + " on the model's device " + device.str() + (device == Device::cpu() ? "" : " or on the CPU"),
                    what + " on " + t.device().str(), "Move it with .to(model.device()) first.");
}

TensorList place_all(const TensorList& ts, Device device, const std::string& where, const char* what) {
  TensorList out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i)
    out.push_back(place(ts[i], device, where, std::string(what) + "[" + std::to_string(i) + "]"));
  return out;
}
}  // namespace

void move_variable_to(const Variable& v, Device device) {
  const Tensor& value = v.value();
  if (value.device() == device) return;
  Tensor moved = value.contiguous().to(device);
  TensorImpl& impl = value.impl();
  // The new storage continues the old one's version count, so that nothing keyed on
  // (storage, version) can mistake one for the other.
  moved.impl().storage->version = impl.storage->version + 1;
  impl.storage = moved.impl().storage;
  impl.offset = moved.impl().offset;
  impl.strides = moved.impl().strides;
}

void Model::to(Device device) {
  placement_ = device;
  for (const LayerPtr& layer : sublayers())
    if (auto* nested = dynamic_cast<Model*>(layer.get())) nested->to(device);
  for (const Variable& v : weights()) move_variable_to(v, device);
  if (train_ && train_->optimizer) {
    const optimizers::Optimizer& opt = *train_->optimizer;
    for (const Variable& v : opt.variables())
      if (!is_optimizer_host_state(opt, v)) move_variable_to(v, device);
  }
}

Device Model::device() const {
  if (placement_) return *placement_;
  for (const Variable& v : weights()) return v.value().device();
  return default_device();
}

BatchData Model::place_batch(BatchData batch, const char* fn) const {
  const Device device = this->device();
  const std::string where = "Model '" + name() + "' " + fn;
  batch.x = place_all(batch.x, device, where, "x");
  batch.y = place_all(batch.y, device, where, "y");
  batch.sample_weight = place(batch.sample_weight, device, where, "sample_weight");
  return batch;
}

}  // namespace keras
