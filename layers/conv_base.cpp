#include "layers/conv_base.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"

namespace keras::layers::conv {

json pair_to_json(const PairArg& p) { return json::array({p.first, p.second}); }

PairArg pair_from_config(const json& c, const std::string& key, PairArg fallback, const std::string& where) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (v.is_number_integer()) return PairArg(v.get<int64_t>());
  if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
    return PairArg(v[0].get<int64_t>(), v[1].get<int64_t>());
  if (v.is_array() && v.size() == 1 && v[0].is_number_integer()) return PairArg(v[0].get<int64_t>());
  fail<ValueError>(where, "'" + key + "' as an integer or a list of 2 integers", v.dump());
}

int64_t int_from_config(const json& c, const std::string& key, int64_t fallback, const std::string& where) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && v.size() == 1 && v[0].is_number_integer()) return v[0].get<int64_t>();
  fail<ValueError>(where, "'" + key + "' as an integer or a list of 1 integer", v.dump());
}

void check_options(const std::string& where, int spatial_rank, const PairArg& k, const PairArg& s, const PairArg& d,
                   const std::string& padding, const std::string& data_format, bool allow_causal) {
  auto positive = [&](const char* name, const PairArg& p) {
    if (p.first < 1 || p.second < 1)
      fail<ValueError>(where, std::string(name) + " >= 1",
                       spatial_rank == 1 ? std::to_string(p.second) : pair_to_json(p).dump());
  };
  positive("kernel_size", k);
  positive("strides", s);
  positive("dilation_rate", d);
  if (padding != "valid" && padding != "same" && !(allow_causal && padding == "causal"))
    fail<ValueError>(where, allow_causal ? "padding 'valid', 'same' or 'causal'" : "padding 'valid' or 'same'",
                     "'" + padding + "'");
  if (data_format != "channels_last" && data_format != "channels_first")
    fail<ValueError>(where, "data_format 'channels_last' or 'channels_first'", "'" + data_format + "'");
  if ((s.first > 1 || s.second > 1) && (d.first > 1 || d.second > 1))
    fail<ValueError>(where, "strides = 1 when dilation_rate > 1",
                     "strides " + pair_to_json(s).dump() + " and dilation_rate " + pair_to_json(d).dump(),
                     "Keras does not combine strides > 1 with dilation.");
}

Shape channels_last_input(const std::string& where, const std::vector<Shape>& shapes, int spatial_rank,
                          const std::string& data_format) {
  if (shapes.size() != 1) fail<ShapeError>(where, "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  size_t rank = static_cast<size_t>(spatial_rank) + 2;
  if (s.size() != rank)
    fail<ShapeError>(where,
                     "an input of rank " + std::to_string(rank) +
                         (data_format == "channels_last" ? " (batch, spatial..., channels)" : " (batch, channels, spatial...)"),
                     "shape " + shape_str(s));
  Shape cl = s;
  if (data_format == "channels_first") {
    cl.erase(cl.begin() + 1);
    cl.push_back(s[1]);
  }
  if (cl.back() < 1)
    fail<ShapeError>(where, "a known channel extent", "shape " + shape_str(s),
                     "The layer needs the number of channels to create its kernel.");
  return cl;
}

std::vector<int64_t> output_extents(const std::string& where, const Shape& in, const std::vector<int64_t>& kernel,
                                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilation,
                                    const std::string& padding) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < kernel.size(); ++i) {
    int64_t extent = in[i + 1];
    int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    if (extent >= 0 && padding == "valid" && extent < span)
      fail<ShapeError>(where, "a kernel (dilated extent " + std::to_string(span) + ") no larger than the padded input",
                       "input " + shape_str(in) + " (channels last) with kernel_size " +
                           json(std::vector<int64_t>(kernel.begin(), kernel.end())).dump(),
                       "Use padding='same', a smaller kernel or a larger input.");
    out.push_back(ops::conv_output_length(extent, kernel[i], padding, strides[i], dilation[i]));
  }
  return out;
}

Shape to_format(const Shape& cl, const std::string& data_format) {
  if (data_format == "channels_last") return cl;
  Shape s{cl[0], cl.back()};
  s.insert(s.end(), cl.begin() + 1, cl.end() - 1);
  return s;
}

Tensor to_channels_last(const Tensor& x, const std::string& data_format) {
  if (data_format == "channels_last") return x;
  std::vector<int> perm{0};
  for (int i = 2; i < x.rank(); ++i) perm.push_back(i);
  perm.push_back(1);
  return ops::transpose(x, perm);
}

Tensor from_channels_last(const Tensor& y, const std::string& data_format) {
  if (data_format == "channels_last") return y;
  std::vector<int> perm{0, y.rank() - 1};
  for (int i = 1; i < y.rank() - 1; ++i) perm.push_back(i);
  return ops::transpose(y, perm);
}

}  // namespace keras::layers::conv
