// Minimal zip archives for .npz files: read stored and deflated entries (zip64 sizes included),
// write stored or deflated ones. Built on zlib (inflate/deflate/crc32); not a general zip tool
// (no encryption, no multi-disk archives).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace keras::data::zip {

struct Entry {
  std::string name;
  std::string data;  // uncompressed bytes
};

// Every entry of the archive at `path`, in central-directory order. Throws IOError naming the file
// (and the entry where one is at fault) for a missing file, no end-of-central-directory record,
// an entry outside the file, an unsupported method, corrupt deflate data or a CRC mismatch.
std::vector<Entry> read_archive(const std::string& path);

// Writes `entries` as a new archive (deflated when `compress`). IOError when it can't be written.
void write_archive(const std::string& path, const std::vector<Entry>& entries, bool compress);

}  // namespace keras::data::zip
