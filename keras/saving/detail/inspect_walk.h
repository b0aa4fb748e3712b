// Internals of keras/saving/inspect.cpp shared by its sources: the generic walk of an HDF5 file and
// the Keras 3 tree's description. Not installed (keras/detail is not a source folder).
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keras/saving/hdf5/hdf5.h"

namespace keras::detail::inspect {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;  // deeper group or config trees are corrupt (or cyclic through hard links)

// "a/b//c" -> {"a", "b", "c"}; parts [begin, end) joined back with '/'.
std::vector<std::string> split_path(const std::string& path);
std::string join(const std::vector<std::string>& parts, size_t begin, size_t end);
// A short run of digits ("0", "17"), safe for std::stoi.
bool is_number(const std::string& s);
// "vars/2" < "vars/10": runs of digits compare by value, as a person reads them.
bool natural_less(const std::string& a, const std::string& b);
// The member `key` of an object (null pointer for a non-object or a missing key); the string
// member or JSON null.
const json* member(const json& j, const char* key);
json string_member(const json& j, const char* key);

// The stored element type in numpy's words ("float32", "int64", "bfloat16", "bool", "string").
std::string stored_dtype(const hdf5::Dataset& ds);

// Builds the entries of one HDF5 file; remembers what is listed so a final sweep adds the rest,
// which is how every dataset ends up listed exactly once. IOError for a group tree deeper than
// kMaxDepth.
class Lister {
 public:
  explicit Lister(hdf5::Group root);
  // Relative paths of every dataset, children in natural order.
  const std::vector<std::string>& all() const { return all_; }
  bool listed(const std::string& rel) const { return listed_.count(rel) > 0; }
  const hdf5::Group& root() const { return root_; }
  // Appends {"path", "layer", "name", "index", "shape", "dtype"} for the dataset at `rel`
  // (relative to the root) unless it is listed already or absent.
  void add(json& list, const std::string& rel, json layer, json name, json index = nullptr);
  // Every unlisted dataset under `prefix` ("" = the whole file), named by its path relative to
  // `name_base` (null name when `name_base` is empty).
  void add_rest(json& list, const std::string& prefix, const json& layer, const std::string& name_base);

 private:
  hdf5::Group root_;
  std::vector<std::string> all_;
  std::set<std::string> listed_;
};

// Fills d["weights"] and d["optimizer"] from a Keras 3 tree (layers/<key>/vars/<i>,
// optimizer/vars/<i>, vars/<i>); d["layers"] from the tree when empty, else sets the hdf5_path
// of the config's layers that the tree holds (matched by vars@name paths).
void describe_tree(Lister& files, json& d);

}  // namespace keras::detail::inspect
