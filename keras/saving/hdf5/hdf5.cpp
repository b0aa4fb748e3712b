// Handles, errors, files and groups of the HDF5 wrapper (attributes: hdf5_attributes.cpp,
// datasets: hdf5_dataset.cpp).
#include "keras/saving/hdf5/hdf5.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "keras/saving/hdf5/detail/hdf5_c.h"

namespace keras::hdf5 {

namespace detail {

void quiet() {
  thread_local bool done = false;
  if (done) return;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

namespace {
herr_t collect_message(unsigned, const H5E_error2_t* err, void* out) {
  auto* messages = static_cast<std::vector<std::string>*>(out);
  if (err && err->desc && *err->desc) messages->emplace_back(err->desc);
  return 0;
}
}  // namespace

std::string error_text() {
  std::vector<std::string> messages;  // outermost (API call) first
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "no HDF5 message";
  if (messages.size() == 1 || messages.front() == messages.back()) return messages.back();
  return messages.front() + ": " + messages.back();
}

}  // namespace detail

using detail::check;
using detail::own;
using detail::quiet;

// ---- Handle ----

Handle::Handle(const Handle& other) : id_(other.id_) {
  if (id_ >= 0) H5Iinc_ref(id_);
}

Handle& Handle::operator=(const Handle& other) {
  if (this != &other) {
    if (other.id_ >= 0) H5Iinc_ref(other.id_);
    release();
    id_ = other.id_;
  }
  return *this;
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    release();
    id_ = other.id_;
    other.id_ = -1;
  }
  return *this;
}

Handle::~Handle() { release(); }

void Handle::release() {
  // H5Idec_ref closes any kind of identifier when its count reaches zero.
  if (id_ >= 0) {
    quiet();
    H5Idec_ref(id_);
  }
  id_ = -1;
}

// ---- Object paths ----

std::string Object::child_path(const std::string& child) const {
  if (child.empty()) return path_;
  return path_ == "/" ? "/" + child : path_ + "/" + child;
}

std::string Object::where(const std::string& child) const { return file_ + ": " + child_path(child); }

// ---- Group ----

namespace {

// A link creation list that makes missing intermediate groups, as h5py does for "a/b/c".
Handle intermediate_lcpl(const std::string& where) {
  Handle lcpl = own(H5Pcreate(H5P_LINK_CREATE), where, "creating a property list");
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), where, "setting intermediate group creation");
  return lcpl;
}

}  // namespace

bool Group::exists(const std::string& name) const {
  quiet();
  if (name.empty()) return false;
  // H5Lexists fails (rather than answering false) when an intermediate link is missing, so
  // walk the path one component at a time.
  std::string prefix;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) {
      prefix += (prefix.empty() ? "" : "/") + part;
      htri_t r = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
      if (r <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  htri_t r = H5Oexists_by_name(id(), name.c_str(), H5P_DEFAULT);  // false for a dangling soft link
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

std::optional<Id> Group::open_object(const std::string& name, int* type) const {
  if (!exists(name)) return std::nullopt;
  hid_t obj = H5Oopen(id(), name.c_str(), H5P_DEFAULT);
  check(obj, where(name), "opening the object");
  *type = static_cast<int>(H5Iget_type(obj));
  return obj;
}

bool Group::has_group(const std::string& name) const {
  int type = 0;
  auto obj = open_object(name, &type);
  if (!obj) return false;
  Handle h(*obj);
  return type == H5I_GROUP;
}

bool Group::has_dataset(const std::string& name) const {
  int type = 0;
  auto obj = open_object(name, &type);
  if (!obj) return false;
  Handle h(*obj);
  return type == H5I_DATASET;
}

Group Group::open_group(const std::string& name) const {
  quiet();
  int type = 0;
  auto obj = open_object(name, &type);
  if (!obj) fail<IOError>(where(name), "a group", "nothing at that path", "The file lacks this entry.");
  Handle h(*obj);
  if (type != H5I_GROUP) fail<IOError>(where(name), "a group", type == H5I_DATASET ? "a dataset" : "another kind of object");
  return Group(std::move(h), file_, child_path(name), heaps_);
}

Dataset Group::open_dataset(const std::string& name) const {
  quiet();
  int type = 0;
  auto obj = open_object(name, &type);
  if (!obj) fail<IOError>(where(name), "a dataset", "nothing at that path", "The file lacks this entry.");
  Handle h(*obj);
  if (type != H5I_DATASET) fail<IOError>(where(name), "a dataset", type == H5I_GROUP ? "a group" : "another kind of object");
  return Dataset(std::move(h), file_, child_path(name), heaps_);
}

Group Group::create_group(const std::string& name) {
  quiet();
  if (name.empty()) fail<ValueError>(where(), "a non-empty group name", "''");
  if (exists(name)) fail<IOError>(where(name), "a new group", "an existing object of that name");
  Handle lcpl = intermediate_lcpl(where(name));
  Handle g = own(H5Gcreate2(id(), name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), where(name), "creating the group");
  return Group(std::move(g), file_, child_path(name), heaps_);
}

Group Group::require_group(const std::string& name) { return exists(name) ? open_group(name) : create_group(name); }

std::vector<std::string> Group::children() const {
  quiet();
  H5G_info_t info;
  check(H5Gget_info(id(), &info), where(), "reading the group's information");
  Handle gcpl = own(H5Gget_create_plist(id()), where(), "reading the group's creation properties");
  unsigned order_flags = 0;
  check(H5Pget_link_creation_order(gcpl.get(), &order_flags), where(), "reading the link creation order");
  // Iterating by creation order needs the order indexed, not merely tracked.
  H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t n = check(H5Lget_name_by_idx(id(), ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT), where(),
                      "reading the name of child " + std::to_string(i));
    std::string name(static_cast<size_t>(n) + 1, '\0');
    check(H5Lget_name_by_idx(id(), ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT), where(),
          "reading the name of child " + std::to_string(i));
    name.resize(static_cast<size_t>(n));
    names.push_back(std::move(name));
  }
  return names;
}

// ---- File ----

namespace {

// HDF5 identifies open files by name, even in memory: every in-memory file gets its own.
std::string unique_memory_name() {
  static std::atomic<uint64_t> counter{0};
  return "keras-memory-file-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

constexpr size_t kCoreIncrement = size_t{4} << 20;  // the in-memory file grows by 4 MiB steps

Handle file_access_list(const std::string& where) {
  Handle fapl = own(H5Pcreate(H5P_FILE_ACCESS), where, "creating a file access property list");
#if H5_VERSION_GE(1, 10, 7)
  // Read-only access and atomic renames make locks unnecessary; some file systems refuse them.
  check(H5Pset_file_locking(fapl.get(), false, true), where, "disabling file locking");
#endif
  return fapl;
}

// detail::check_global_heaps on a file, mapped rather than read.
std::shared_ptr<const detail::HeapIndex> check_file_on_disk(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail<IOError>(path, "a readable file", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return nullptr;  // HDF5 reports the empty file
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail<IOError>(path, "a file that can be mapped for checking", std::strerror(errno));
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, static_cast<size_t>(st.st_size)};
  return detail::check_global_heaps(std::string_view(static_cast<const char*>(map), unmap.n), path);
}

}  // namespace

File File::create_in_memory(const std::string& display_name) {
  quiet();
  Handle fapl = file_access_list(display_name);
  check(H5Pset_fapl_core(fapl.get(), kCoreIncrement, false), display_name, "selecting the in-memory driver");
  Handle f = own(H5Fcreate(unique_memory_name().c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), display_name,
                 "creating an in-memory HDF5 file");
  return File(std::move(f), display_name, nullptr);
}

File File::open(const std::string& path) {
  quiet();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    fail<IOError>(path, "an existing HDF5 file", "no such file");
  if (!std::filesystem::is_regular_file(path, ec)) fail<IOError>(path, "an HDF5 file", "a directory or special file");
  auto heaps = check_file_on_disk(path);
  Handle fapl = file_access_list(path);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0)
    fail<IOError>(path, "a readable HDF5 file", detail::error_text(), "The file is truncated, corrupt or not HDF5.");
  return File(Handle(f), path, std::move(heaps));
}

File File::open_image(std::string_view bytes, const std::string& display_name) {
  quiet();
  if (bytes.empty()) fail<IOError>(display_name, "an HDF5 file", "0 bytes", "The file is empty.");
  auto heaps = detail::check_global_heaps(bytes, display_name);
  Handle fapl = file_access_list(display_name);
  check(H5Pset_fapl_core(fapl.get(), kCoreIncrement, false), display_name, "selecting the in-memory driver");
  // HDF5 copies the image into the file access list.
  check(H5Pset_file_image(fapl.get(), const_cast<char*>(bytes.data()), bytes.size()), display_name,
        "passing the file image");
  hid_t f = H5Fopen(unique_memory_name().c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0)
    fail<IOError>(display_name, "a readable HDF5 file", detail::error_text(),
                  "The file is truncated, corrupt or not HDF5.");
  return File(Handle(f), display_name, std::move(heaps));
}

Group File::root() const {
  quiet();
  Handle g = own(H5Gopen2(handle_.get(), "/", H5P_DEFAULT), name_, "opening the root group");
  return Group(std::move(g), name_, "/", heaps_);
}

std::string File::image() const {
  quiet();
  check(H5Fflush(handle_.get(), H5F_SCOPE_GLOBAL), name_, "flushing the file");
  ssize_t n = check(H5Fget_file_image(handle_.get(), nullptr, 0), name_, "measuring the file image");
  std::string bytes(static_cast<size_t>(n), '\0');
  check(H5Fget_file_image(handle_.get(), bytes.data(), bytes.size()), name_, "copying the file image");
  return bytes;
}

bool looks_like_hdf5(std::string_view bytes) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  // The superblock sits at 0 or at a power of two from 512 on (a user block precedes it).
  for (size_t offset = 0; offset + 8 <= bytes.size(); offset = offset == 0 ? 512 : offset * 2)
    if (std::memcmp(bytes.data() + offset, kSignature, 8) == 0) return true;
  return false;
}

}  // namespace keras::hdf5
