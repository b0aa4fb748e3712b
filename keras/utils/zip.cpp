// Zip reading and writing for .npz (PKWARE APPNOTE 6.3: local headers, central directory,
// end-of-central-directory record, zip64 extensions as numpy's force_zip64 writes them).
#include "keras/utils/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "backend/errors.h"
#include "keras/utils/file_util.h"

namespace keras::zip {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;

// Bounds-checked little-endian reads from the archive bytes.
struct Reader {
  const std::string& buf;
  const std::string& where;
  uint64_t u(uint64_t pos, int bytes) const {
    if (pos + static_cast<uint64_t>(bytes) > buf.size())
      fail<IOError>(where, "a complete zip archive", "a record running past the end of the file at byte " + std::to_string(pos),
                    "The file is truncated or not a zip/.npz archive.");
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(buf[pos + static_cast<uint64_t>(i)]);
    return v;
  }
};

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint32_t crc_of(const std::string& data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  while (left > 0) {
    uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string inflate_raw(const char* src, uint64_t comp_size, uint64_t size, const std::string& where) {
  std::string out(size, '\0');
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) fail<IOError>(where, "zlib to initialise", "an inflateInit2 failure");
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src));
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  uint64_t in_left = comp_size, out_left = size;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (s.avail_in == 0 && in_left > 0) {
      s.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      in_left -= s.avail_in;
    }
    if (s.avail_out == 0 && out_left > 0) {
      s.avail_out = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
      out_left -= s.avail_out;
    }
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && s.avail_in == 0 && in_left == 0) break;  // input ended early
    if (rc == Z_BUF_ERROR && s.avail_out == 0 && out_left == 0) break;  // more data than declared
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  const uint64_t produced = s.total_out;
  const char* msg = s.msg;
  inflateEnd(&s);
  if (rc != Z_STREAM_END || produced != size)
    fail<IOError>(where, "valid deflate data of " + std::to_string(size) + " bytes",
                  rc == Z_DATA_ERROR ? std::string("corrupt data (") + (msg ? msg : "zlib data error") + ")"
                                     : std::to_string(produced) + " bytes before the stream " +
                                           (rc == Z_STREAM_END ? "ended" : "broke off"));
  return out;
}

std::string deflate_raw(const std::string& data, const std::string& where) {
  z_stream s{};
  if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail<IOError>(where, "zlib to initialise", "a deflateInit2 failure");
  std::string out;
  std::string chunk(1 << 16, '\0');
  size_t pos = 0;
  int rc = Z_OK;
  do {
    if (s.avail_in == 0 && pos < data.size()) {
      size_t n = std::min<size_t>(data.size() - pos, 1u << 30);
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
      s.avail_in = static_cast<uInt>(n);
      pos += n;
    }
    s.next_out = reinterpret_cast<Bytef*>(chunk.data());
    s.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&s, pos == data.size() ? Z_FINISH : Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - s.avail_out);
  } while (rc != Z_STREAM_END && rc != Z_STREAM_ERROR);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) fail<IOError>(where, "deflate to finish", "a zlib stream error");
  return out;
}

}  // namespace

std::vector<Entry> read_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("zip archive '" + path + "'", "a readable file", "a missing or unreadable file");
  std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_archive_bytes(buf, path);
}

std::vector<Entry> read_archive_bytes(const std::string& buf, const std::string& name) {
  const std::string where = "zip archive '" + name + "'";
  Reader r{buf, where};

  // The end record sits in the last 22 + 65535 (comment) bytes; search backwards for it.
  int64_t end = -1;
  const int64_t lowest = std::max<int64_t>(0, static_cast<int64_t>(buf.size()) - 22 - 65535);
  for (int64_t p = static_cast<int64_t>(buf.size()) - 22; p >= lowest; --p)
    if (r.u(static_cast<uint64_t>(p), 4) == kEndSig) {
      end = p;
      break;
    }
  if (end < 0)
    fail<IOError>(where, "a zip end-of-central-directory record", "none",
                  "The file is truncated or not a zip/.npz archive.");
  const auto e = static_cast<uint64_t>(end);
  uint64_t count = r.u(e + 10, 2), cd_size = r.u(e + 12, 4), cd_offset = r.u(e + 16, 4);
  if ((count == 0xFFFF || cd_size == kMax32 || cd_offset == kMax32) && e >= 20 && r.u(e - 20, 4) == kZip64LocatorSig) {
    uint64_t z = r.u(e - 20 + 8, 8);
    if (r.u(z, 4) != kZip64EndSig) fail<IOError>(where, "a zip64 end-of-central-directory record", "a bad signature");
    count = r.u(z + 32, 8);
    cd_size = r.u(z + 40, 8);
    cd_offset = r.u(z + 48, 8);
  }
  if (cd_offset + cd_size > buf.size())
    fail<IOError>(where, "a central directory inside the file", "one ending at byte " + std::to_string(cd_offset + cd_size) +
                                                                    " of " + std::to_string(buf.size()), "The file is truncated.");

  std::vector<Entry> entries;
  uint64_t p = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (r.u(p, 4) != kCentralSig)
      fail<IOError>(where, "central directory entry " + std::to_string(i), "a bad signature at byte " + std::to_string(p));
    const uint64_t flags = r.u(p + 8, 2), method = r.u(p + 10, 2), crc = r.u(p + 16, 4);
    uint64_t comp = r.u(p + 20, 4), size = r.u(p + 24, 4);
    const uint64_t name_len = r.u(p + 28, 2), extra_len = r.u(p + 30, 2), comment_len = r.u(p + 32, 2);
    uint64_t local = r.u(p + 42, 4);
    Entry entry;
    if (p + 46 + name_len > buf.size()) fail<IOError>(where, "a complete central directory", "a truncated entry name");
    entry.name = buf.substr(p + 46, name_len);
    const std::string ewhere = where + ", entry '" + entry.name + "'";
    if (!is_safe_entry_name(entry.name))
      fail<IOError>(ewhere, "a relative path inside the archive", "a name that is empty, absolute or escapes it with '..'",
                    "The archive is corrupt or crafted; it is not read.");
    // Zip64 extra field: the 64-bit values of the fields saturated at 0xFFFFFFFF, in this order.
    for (uint64_t x = p + 46 + name_len; x + 4 <= p + 46 + name_len + extra_len;) {
      uint64_t id = r.u(x, 2), len = r.u(x + 2, 2), q = x + 4;
      if (id == 0x0001) {
        if (size == kMax32) { size = r.u(q, 8); q += 8; }
        if (comp == kMax32) { comp = r.u(q, 8); q += 8; }
        if (local == kMax32) { local = r.u(q, 8); q += 8; }
      }
      x += 4 + len;
    }
    if (flags & 1) fail<IOError>(ewhere, "an unencrypted entry", "an encrypted one");
    if (r.u(local, 4) != kLocalSig)
      fail<IOError>(ewhere, "a local file header at byte " + std::to_string(local), "a bad signature",
                    "The archive is corrupt or truncated.");
    const uint64_t data_at = local + 30 + r.u(local + 26, 2) + r.u(local + 28, 2);
    if (data_at + comp > buf.size())
      fail<IOError>(ewhere, std::to_string(comp) + " bytes of data", std::to_string(buf.size() > data_at ? buf.size() - data_at : 0) +
                                                                        " before the end of the file", "The archive is truncated.");
    if (method == 0) {
      if (comp != size) fail<IOError>(ewhere, "equal sizes for a stored entry", std::to_string(comp) + " and " + std::to_string(size));
      entry.data = buf.substr(data_at, size);
    } else if (method == 8) {
      // Deflate expands at most ~1032:1; a larger claimed size is corruption, not a reason to
      // allocate gigabytes.
      if (size > comp * 1032 + 1024)
        fail<IOError>(ewhere, "an uncompressed size deflate can produce from " + std::to_string(comp) + " bytes",
                      std::to_string(size), "The archive is corrupt.");
      entry.data = inflate_raw(buf.data() + data_at, comp, size, ewhere);
    } else {
      fail<IOError>(ewhere, "compression method 0 (stored) or 8 (deflate)", "method " + std::to_string(method));
    }
    if (crc_of(entry.data) != crc) fail<IOError>(ewhere, "data matching its CRC-32", "a CRC mismatch", "The archive is corrupt.");
    entries.push_back(std::move(entry));
    p += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

std::string archive_bytes(const std::vector<Entry>& entries, bool compress, const std::string& name) {
  const std::string where = "zip archive '" + name + "'";
  std::string out, central;
  for (const auto& e : entries) {
    const std::string ewhere = where + ", entry '" + e.name + "'";
    std::string packed = compress ? deflate_raw(e.data, ewhere) : std::string();
    const std::string& body = compress ? packed : e.data;
    if (body.size() >= kMax32 || e.data.size() >= kMax32 || out.size() >= kMax32)
      fail<IOError>(ewhere, "an entry under 4 GiB", std::to_string(e.data.size()) + " bytes");
    const uint32_t crc = crc_of(e.data);
    const uint64_t local = out.size();
    auto header = [&](std::string& h, bool is_central) {
      put(h, is_central ? kCentralSig : kLocalSig, 4);
      if (is_central) put(h, 20, 2);  // version made by
      put(h, 20, 2);                   // version needed
      put(h, 0, 2);                    // flags
      put(h, compress ? 8 : 0, 2);
      put(h, 0, 2);                    // time 00:00
      put(h, (1 << 5) | 1, 2);         // date 1980-01-01
      put(h, crc, 4);
      put(h, body.size(), 4);
      put(h, e.data.size(), 4);
      put(h, e.name.size(), 2);
      put(h, 0, 2);  // extra
      if (is_central) {
        put(h, 0, 2);  // comment
        put(h, 0, 2);  // disk
        put(h, 0, 2);  // internal attributes
        put(h, 0, 4);  // external attributes
        put(h, local, 4);
      }
      h += e.name;
    };
    header(out, false);
    out += body;
    header(central, true);
  }
  const uint64_t cd_offset = out.size();
  out += central;
  put(out, kEndSig, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, entries.size(), 2);
  put(out, entries.size(), 2);
  put(out, central.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

bool is_safe_entry_name(const std::string& name) {
  if (name.empty() || name[0] == '/' || name[0] == '\\' || name.find('\0') != std::string::npos) return false;
  if (name.size() > 1 && name[1] == ':') return false;  // a Windows drive letter
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find_first_of("/\\", start);
    if (end == std::string::npos) end = name.size();
    if (name.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

void write_archive(const std::string& path, const std::vector<Entry>& entries, bool compress) {
  write_file_atomic(path, archive_bytes(entries, compress, path));
}

}  // namespace keras::zip
