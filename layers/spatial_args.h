// Argument types of the image layers (pooling, padding, cropping, upsampling) that accept what
// Keras accepts: an int or a pair for a window, and an int, a pair or a pair of pairs for
// padding. They read and write the Keras config forms.
//   MaxPooling2D({.pool_size = 2})            ZeroPadding2D({.padding = {{1, 2}, {0, 1}}})
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "backend/errors.h"
#include "backend/ops_nn.h"

namespace keras::layers {

using json = nlohmann::json;

// (height, width); one int sets both.
struct PairArg {
  int64_t first = 0, second = 0;
  PairArg(int64_t v = 0) : first(v), second(v) {}
  PairArg(int64_t a, int64_t b) : first(a), second(b) {}
  ops::Size2 size2() const { return {first, second}; }
  bool operator==(const PairArg&) const = default;
  json to_json() const { return json::array({first, second}); }
  std::string str() const { return "(" + std::to_string(first) + ", " + std::to_string(second) + ")"; }
  // An int or a list of 2 ints; ValueError naming `where` otherwise.
  static PairArg from_json(const json& j, const std::string& where) {
    if (j.is_number_integer()) return PairArg(j.get<int64_t>());
    if (j.is_array() && j.size() == 2 && j[0].is_number_integer() && j[1].is_number_integer())
      return PairArg(j[0].get<int64_t>(), j[1].get<int64_t>());
    fail<ValueError>(where, "an int or a list of 2 ints", j.dump());
  }
};

// ((top, bottom), (left, right)); an int pads all four sides, a pair of ints (h, w) pads
// top/bottom by h and left/right by w, as Keras.
struct Padding2DArg {
  PairArg height, width;
  Padding2DArg(int64_t v = 0) : height(v), width(v) {}
  Padding2DArg(PairArg h, PairArg w) : height(h), width(w) {}
  std::array<ops::Size2, 2> sizes() const { return {height.size2(), width.size2()}; }
  bool operator==(const Padding2DArg&) const = default;
  json to_json() const { return json::array({height.to_json(), width.to_json()}); }
  std::string str() const { return "(" + height.str() + ", " + width.str() + ")"; }
  static Padding2DArg from_json(const json& j, const std::string& where) {
    if (j.is_number_integer()) return Padding2DArg(j.get<int64_t>());
    if (j.is_array() && j.size() == 2)
      return Padding2DArg(PairArg::from_json(j[0], where), PairArg::from_json(j[1], where));
    fail<ValueError>(where, "an int, 2 ints or 2 pairs of ints", j.dump());
  }
};

// Only channels_last is implemented; channels_first fails where it is written.
inline void require_channels_last(const std::string& data_format, const std::string& where) {
  if (data_format == "channels_last") return;
  if (data_format == "channels_first")
    fail<NotImplementedError>(where, "data_format 'channels_last'", "'channels_first'",
                              "channels_first is not supported yet; transpose to NHWC.");
  fail<ValueError>(where, "data_format 'channels_last' or 'channels_first'", "'" + data_format + "'");
}

// data_format from a config: a string, or null (Keras's image_data_format default).
inline std::string data_format_from_config(const json& c) {
  if (c.contains("data_format") && c["data_format"].is_string()) return c["data_format"].get<std::string>();
  return "channels_last";
}

}  // namespace keras::layers
