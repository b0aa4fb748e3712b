// Minimal zip archives for .npz and .keras files: read stored and deflated entries (zip64 sizes included),
// write stored or deflated ones. Built on zlib (inflate/deflate/crc32); not a general zip tool
// (no encryption, no multi-disk archives).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace keras::zip {

struct Entry {
  std::string name;
  std::string data;  // uncompressed bytes
};

// Every entry of the archive at `path`, in central-directory order. Throws IOError naming the file
// (and the entry where one is at fault) for a missing file, no end-of-central-directory record,
// an entry outside the file, an unsupported method, corrupt deflate data or a CRC mismatch.
std::vector<Entry> read_archive(const std::string& path);
// The same from the archive's bytes; `name` is the file name the errors use. Entry names that
// are absolute or climb out with ".." are rejected (IOError naming the entry).
std::vector<Entry> read_archive_bytes(const std::string& bytes, const std::string& name);

// Writes `entries` as a new archive (deflated when `compress`). IOError when it can't be written.
void write_archive(const std::string& path, const std::vector<Entry>& entries, bool compress);
// The archive's bytes (for callers that write atomically themselves); `name` for errors.
std::string archive_bytes(const std::vector<Entry>& entries, bool compress, const std::string& name);

// True for a relative entry path that stays inside the archive's root (no "..", no drive).
bool is_safe_entry_name(const std::string& name);

}  // namespace keras::zip
