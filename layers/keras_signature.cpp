#include "layers/keras_signature.h"

#include <map>

namespace keras {
namespace {
std::map<std::string, KerasSignature>& table() {
  static std::map<std::string, KerasSignature> t;
  return t;
}
}  // namespace

void register_keras_signature(const std::string& class_name, const KerasSignature& signature) {
  table()[class_name] = signature;
}

const KerasSignature& keras_signature(const std::string& class_name) {
  static const KerasSignature fallback;
  auto it = table().find(class_name);
  return it == table().end() ? fallback : it->second;
}

}  // namespace keras
