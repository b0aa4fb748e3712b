// Typed errors of the framework. Every message follows one form:
//   "<where>: expected <x>, got <y>. <hint>"
// so that a user can tell which layer, op or file failed and what would fix it.
#pragma once
#include <stdexcept>
#include <string>

namespace keras {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ValueError : public Error { public: using Error::Error; };        // bad argument value
class ShapeError : public ValueError { public: using ValueError::ValueError; };  // shapes do not fit
class TypeError : public Error { public: using Error::Error; };         // wrong dtype or class
class IndexError : public Error { public: using Error::Error; };        // out-of-range index/label
class DeviceError : public Error { public: using Error::Error; };       // device mismatch / missing
class NotImplementedError : public Error { public: using Error::Error; };  // missing kernel
class IOError : public Error { public: using Error::Error; };           // files: missing, corrupt
class StateError : public Error { public: using Error::Error; };        // called in the wrong state

// Builds the canonical message; `hint` may be empty.
std::string error_message(const std::string& where, const std::string& expected,
                          const std::string& got, const std::string& hint = "");

// Throws E with the canonical message.
template <class E = ValueError>
[[noreturn]] void fail(const std::string& where, const std::string& expected,
                       const std::string& got, const std::string& hint = "") {
  throw E(error_message(where, expected, got, hint));
}

}  // namespace keras
