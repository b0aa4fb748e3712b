// Python's text formatting where Keras file names and CSV cells depend on it:
// str.format with named fields ("ckpt-{epoch:02d}-{val_loss:.2f}.keras") and str(float).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace keras::callbacks {

// An integer (epoch, batch) or a float (a logged figure): Python tells them apart ('d' is an
// error on a float; "{epoch}" prints 3 but "{loss}" prints 0.5).
using FormatValue = std::variant<int64_t, double>;

// Python's str.format(**values) for named fields with a format-spec subset:
//   [[fill]align][sign][#][0][width][.precision][type], align in <>=^, sign in +-space,
//   type in d f F e E g G % or none; "{{" / "}}" are literal braces; "!r"/"!s" are accepted.
// Throws ValueError (prefixed with `where`) for a field not in `values` (listing the known
// ones), positional or indexed fields, unmatched braces, an unsupported spec, or 'd' on a float.
std::string format_python(const std::string& where, const std::string& pattern,
                          const std::map<std::string, FormatValue>& values);

// Python's repr/str of a float: the shortest text that reads back the same value, in fixed
// notation for exponents -4..15 ("0.25", "3.0", "1e-05", "1.5e+16", "nan", "inf", "-inf").
std::string python_float_repr(double value);

}  // namespace keras::callbacks
