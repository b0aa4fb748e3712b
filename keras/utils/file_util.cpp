#include "keras/utils/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "backend/errors.h"

namespace keras {

namespace {

// Unique per process and call, so that two threads saving the same path never share a
// temporary file.
std::string temp_name(const std::string& filename) {
  static std::atomic<uint64_t> counter{0};
  return filename + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Makes the rename itself durable. Best effort: some file systems refuse fsync on directories.
void sync_directory_of(const std::string& filename) {
  std::filesystem::path dir = std::filesystem::path(filename).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomic(const std::string& filename, const std::string& bytes) {
  const std::string tmp = temp_name(filename);
  auto io_fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    fail<IOError>("Writing '" + filename + "'", step + " to succeed", std::strerror(err),
                  "Check that the directory exists and is writable.");
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("creating the temporary file '" + tmp + "'", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      int err = errno;
      if (err == EINTR) continue;
      ::close(fd);
      io_fail("writing", err);
    }
    done += static_cast<size_t>(w);
  }
  // Data reaches the disk before the rename makes it visible: a power cut cannot leave an
  // empty file under the final name.
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    io_fail("fsync", err);
  }
  if (::close(fd) != 0) io_fail("closing", errno);
  if (::rename(tmp.c_str(), filename.c_str()) != 0) io_fail("renaming the temporary file", errno);
  sync_directory_of(filename);
}

std::string read_file_bytes(const std::string& filename) {
  const std::string where = "File '" + filename + "'";
  int fd = ::open(filename.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    fail<IOError>(where, "an existing, readable file", err == ENOENT ? "no such file" : std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail<IOError>(where, "a regular file", "a directory or special file");
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      int err = errno;
      if (err == EINTR) continue;
      ::close(fd);
      fail<IOError>(where, "a readable file", std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace keras
