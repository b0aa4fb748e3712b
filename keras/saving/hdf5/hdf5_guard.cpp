// Checks of what HDF5 1.10 does not validate before trusting it: global heap collections and
// the variable-length references into them (see detail/hdf5_c.h). Fuzzing the library with
// corrupted Keras files crashed it mostly there (H5HG_read copying a corrupt object size).
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "keras/saving/hdf5/detail/hdf5_c.h"

namespace keras::hdf5::detail {

namespace {

uint64_t load_le(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

struct Superblock {
  size_t offset = 0;  // addresses are relative to it
  size_t address_size = 0;
  size_t length_size = 0;
};

std::optional<Superblock> find_superblock(std::string_view bytes) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  for (size_t off = 0; off + 16 <= bytes.size(); off = off == 0 ? 512 : off * 2) {
    if (std::memcmp(bytes.data() + off, kSignature, 8) != 0) continue;
    const bool old = static_cast<unsigned char>(bytes[off + 8]) < 2;  // version 0/1 vs 2/3 layout
    return Superblock{off, static_cast<unsigned char>(bytes[off + (old ? 13 : 9)]),
                      static_cast<unsigned char>(bytes[off + (old ? 14 : 10)])};
  }
  return std::nullopt;
}

// An opaque type tagged so that only our conversion below accepts it.
constexpr const char* kRawTag = "keras-cpp raw variable-length reference";

// A "conversion" from a variable-length string to the tagged opaque type of the same size that
// leaves the stored references as they are: H5Aread then hands them over unread.
herr_t keep_raw(hid_t src, hid_t dst, H5T_cdata_t* cdata, size_t, size_t, size_t, void*, void*, hid_t) {
  if (cdata->command != H5T_CONV_INIT) return 0;
  if (H5Tget_class(dst) != H5T_OPAQUE || H5Tis_variable_str(src) <= 0 || H5Tget_size(src) != H5Tget_size(dst))
    return -1;
  char* tag = H5Tget_tag(dst);
  const bool ours = tag && std::strcmp(tag, kRawTag) == 0;
  H5free_memory(tag);
  if (!ours) return -1;
  cdata->need_bkg = H5T_BKG_NO;
  return 0;
}

void register_keep_raw() {
  static std::once_flag once;
  std::call_once(once, [] {
    hid_t vlen = H5Tcopy(H5T_C_S1);
    H5Tset_size(vlen, H5T_VARIABLE);
    hid_t opaque = H5Tcreate(H5T_OPAQUE, 1);
    H5Tregister(H5T_PERS_SOFT, "keras-cpp keep raw vlen", vlen, opaque, keep_raw);
    H5Tclose(opaque);
    H5Tclose(vlen);
  });
}

}  // namespace

std::shared_ptr<const HeapIndex> check_global_heaps(std::string_view bytes, const std::string& where) {
  auto sb = find_superblock(bytes);
  if (!sb || sb->length_size == 0 || sb->length_size > 8 || sb->address_size == 0 || sb->address_size > 8)
    return nullptr;  // HDF5 rejects such files itself
  auto index = std::make_shared<HeapIndex>();
  index->address_size = sb->address_size;
  // Collection header: "GCOL", version 1, 3 reserved zero bytes, collection size. Eight fixed
  // bytes make a false match inside raw data practically impossible.
  static const char kHeader[8] = {'G', 'C', 'O', 'L', 1, 0, 0, 0};
  const size_t L = sb->length_size;
  const size_t header = 8 + L;
  const size_t object_header = 8 + L;  // index (2), reference count (2), reserved (4), size
  size_t pos = sb->offset;
  while (pos < bytes.size()) {
    const void* hit = memmem(bytes.data() + pos, bytes.size() - pos, kHeader, sizeof kHeader);
    if (!hit) break;
    const size_t start = static_cast<size_t>(static_cast<const char*>(hit) - bytes.data());
    pos = start + 1;
    auto broken = [&](const std::string& what) {
      fail<IOError>(where, "intact global heap collections (variable-length data)",
                    "a broken one at byte " + std::to_string(start) + " (" + what + ")", "The file is corrupt.");
    };
    if (start + header > bytes.size()) broken("truncated header");
    const uint64_t size = load_le(bytes.data() + start + 8, L);
    if (size < header || size > bytes.size() - start) broken("collection size " + std::to_string(size));
    auto& objects = index->objects[start - sb->offset];
    // Walk the objects as HDF5's decoder does, but with bounds: each lies inside the collection
    // and advances; the free-space object (index 0) is sized with its header.
    size_t p = start + header;
    const size_t end = start + size;
    while (p + object_header <= end) {
      const auto id = static_cast<uint32_t>(load_le(bytes.data() + p, 2));
      const uint64_t object_size = load_le(bytes.data() + p + 8, L);
      if (object_size > end - p) broken("object size " + std::to_string(object_size));
      const uint64_t need = id > 0 ? object_header + ((object_size + 7) & ~uint64_t{7}) : object_size;
      if (need == 0 || need > end - p) broken("object " + std::to_string(id) + " of " + std::to_string(need) + " bytes");
      if (id > 0) objects[id] = object_size;
      p += need;
    }
  }
  return index;
}

void check_vlen_references(hid_t attr, hssize_t count, const HeapIndex& heaps, const std::string& where) {
  // The characters' type sizes what HDF5 allocates per element: it must be one byte.
  Handle type = own(H5Aget_type(attr), where, "reading the attribute's type");
  hid_t base = H5Tget_super(type.get());
  if (base >= 0) {
    Handle owned(base);
    if (H5Tget_size(base) != 1)
      fail<IOError>(where, "1-byte characters in a variable-length string", std::to_string(H5Tget_size(base)) + "-byte ones",
                    "The file is corrupt.");
  } else {
    H5Eclear2(H5E_DEFAULT);
  }
  register_keep_raw();
  const size_t A = heaps.address_size;
  const size_t ref_size = 4 + A + 4;  // sequence length, collection address, object index
  Handle raw = own(H5Tcreate(H5T_OPAQUE, ref_size), where, "creating a raw reference type");
  check(H5Tset_tag(raw.get(), kRawTag), where, "creating a raw reference type");
  std::vector<char> refs(static_cast<size_t>(count) * ref_size);
  check(H5Aread(attr, raw.get(), refs.data()), where, "reading the attribute's heap references");
  for (hssize_t i = 0; i < count; ++i) {
    const char* r = refs.data() + static_cast<size_t>(i) * ref_size;
    const uint64_t length = load_le(r, 4);
    const uint64_t address = load_le(r + 4, A);
    const auto id = static_cast<uint32_t>(load_le(r + 4 + A, 4));
    if (address == 0) continue;  // a null string: HDF5 reads nothing
    auto collection = heaps.objects.find(address);
    auto object = collection == heaps.objects.end() ? nullptr : &collection->second;
    auto found = object ? object->find(id) : decltype(object->find(id)){};
    // HDF5 stores exactly `length` bytes; anything else is corrupt (and a huge length alone
    // would make HDF5 allocate and clear that much).
    if (!object || found == object->end() || found->second != length)
      fail<IOError>(where, "element " + std::to_string(i) + " to refer to stored string data",
                    "a reference to object " + std::to_string(id) + " of the heap at " + std::to_string(address) +
                        (object && found != object->end() ? " whose size is not the element's length " + std::to_string(length) : ""),
                    "The file is corrupt.");
  }
}

}  // namespace keras::hdf5::detail
