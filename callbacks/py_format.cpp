#include "callbacks/py_format.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backend/errors.h"

namespace keras::callbacks {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest round-trip digits in scientific form: "-d.ddde+XX".
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  size_t epos = s.find('e');
  int exp = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.') digits += s[i];
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += e;
  } else if (exp >= 0) {
    size_t int_digits = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_digits) {
      out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_digits);
      out.append(".").append(digits, int_digits);
    }
  } else {
    out = "0.";
    out.append(static_cast<size_t>(-exp - 1), '0').append(digits);
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

namespace {

struct Spec {
  char fill = ' ';
  char align = 0;  // 0: default (right for numbers)
  char sign = '-';
  bool alt = false;
  int width = 0;
  int precision = -1;
  char type = 0;
};

Spec parse_spec(const std::string& where, const std::string& field, const std::string& s) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') spec.alt = true, ++i;
  if (i < s.size() && s[i] == '0') {
    if (!spec.align) spec.fill = '0', spec.align = '=';
    ++i;
  }
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) spec.width = spec.width * 10 + (s[i++] - '0');
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i])))
      fail<ValueError>(where, "a precision after '.' in the format of field '" + field + "'", "'" + s + "'");
    spec.precision = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      spec.precision = spec.precision * 10 + (s[i++] - '0');
  }
  if (i < s.size()) {
    char t = s[i++];
    if (std::string("dfFeEgG%").find(t) == std::string::npos || i != s.size())
      fail<ValueError>(where, "a format spec [[fill]align][sign][#][0][width][.precision][dfFeEgG%] for field '" +
                                  field + "'", "'" + s + "'");
    spec.type = t;
  }
  return spec;
}

std::string printf_float(const Spec& spec, double v, char type, int precision) {
  std::string fmt = "%";
  if (spec.sign == '+') fmt += '+';
  if (spec.sign == ' ') fmt += ' ';
  if (spec.alt) fmt += '#';
  fmt += '.';
  fmt += std::to_string(precision);
  fmt += type;
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt.c_str(), v);
  return buf;
}

std::string render(const std::string& where, const std::string& field, const FormatValue& value, const Spec& spec) {
  std::string body;
  if (const int64_t* iv = std::get_if<int64_t>(&value)) {
    if (spec.type == 0 || spec.type == 'd') {
      if (spec.precision >= 0)
        fail<ValueError>(where, "no precision for the integer field '" + field + "'", "a precision");
      body = std::to_string(*iv);
      if (*iv >= 0 && spec.sign != '-') body = std::string(1, spec.sign) + body;
    } else {
      return render(where, field, FormatValue(static_cast<double>(*iv)), spec);
    }
  } else {
    double v = std::get<double>(value);
    switch (spec.type) {
      case 'd':
        fail<ValueError>(where, "format code 'd' on an integer field", "'d' on the float field '" + field + "'",
                         "Use a float format such as {" + field + ":.2f}.");
      case 0:
        if (spec.precision < 0) {
          body = python_float_repr(v);
          if (!std::signbit(v) && spec.sign != '-') body = std::string(1, spec.sign) + body;
        } else {
          body = printf_float(spec, v, 'g', spec.precision == 0 ? 1 : spec.precision);
          if (std::isfinite(v) && body.find_first_of(".e") == std::string::npos) body += ".0";
        }
        break;
      case '%':
        body = printf_float(spec, v * 100.0, 'f', spec.precision < 0 ? 6 : spec.precision) + "%";
        break;
      default:
        body = printf_float(spec, v, spec.type, spec.precision < 0 ? 6 : spec.precision);
    }
  }
  if (static_cast<int>(body.size()) >= spec.width) return body;
  size_t pad = static_cast<size_t>(spec.width) - body.size();
  switch (spec.align) {
    case '<': return body + std::string(pad, spec.fill);
    case '^': return std::string(pad / 2, spec.fill) + body + std::string(pad - pad / 2, spec.fill);
    case '=': {
      size_t sign_len = !body.empty() && (body[0] == '+' || body[0] == '-' || body[0] == ' ') ? 1 : 0;
      return body.substr(0, sign_len) + std::string(pad, spec.fill) + body.substr(sign_len);
    }
    default: return std::string(pad, spec.fill) + body;
  }
}

std::string known_fields(const std::map<std::string, FormatValue>& values) {
  std::string out;
  for (const auto& [k, v] : values) out += (out.empty() ? "" : ", ") + k;
  return "[" + out + "]";
}

}  // namespace

std::string format_python(const std::string& where, const std::string& pattern,
                          const std::map<std::string, FormatValue>& values) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail<ValueError>(where, "'}' doubled as '}}' outside a field", "a single '}' in \"" + pattern + "\"");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = pattern.find('}', i);
    if (close == std::string::npos)
      fail<ValueError>(where, "a '}' closing the field", "an unmatched '{' in \"" + pattern + "\"");
    std::string field = pattern.substr(i + 1, close - i - 1);
    std::string spec_text;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec_text = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      std::string conv = field.substr(bang + 1);
      if (conv != "r" && conv != "s")
        fail<ValueError>(where, "conversion !r or !s", "'!" + conv + "' in \"" + pattern + "\"");
      field = field.substr(0, bang);
    }
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0])) ||
        field.find_first_of(".[") != std::string::npos)
      fail<ValueError>(where, "a named field such as {epoch} or {val_loss:.2f}",
                       "'{" + field + "}' in \"" + pattern + "\"", "Positional, attribute and index fields are not supported.");
    auto it = values.find(field);
    if (it == values.end())
      fail<ValueError>(where, "a field among the logged keys " + known_fields(values),
                       "unknown key '" + field + "' in \"" + pattern + "\"");
    out += render(where, field, it->second, parse_spec(where, field, spec_text));
    i = close;
  }
  return out;
}

}  // namespace keras::callbacks
