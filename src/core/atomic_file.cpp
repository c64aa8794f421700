#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>  // renameat2
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

namespace stride {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// ".<name>.tmp-<random>" beside the target: hidden, and never a valid model
// version or file name a reader would pick up.
std::string temp_name_for(const std::string& target, uint64_t salt) {
  const size_t slash = target.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  static const char kHex[] = "0123456789abcdef";
  std::string suffix;
  for (int i = 0; i < 12; ++i) suffix.push_back(kHex[(salt >> (4 * i)) & 15]);
  return dir + "." + base + ".tmp-" + suffix;
}

}  // namespace

AtomicFile::~AtomicFile() { discard(); }

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : fd_(other.fd_), target_(std::move(other.target_)), tmp_(std::move(other.tmp_)), written_(other.written_) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    fd_ = other.fd_;
    target_ = std::move(other.target_);
    tmp_ = std::move(other.tmp_);
    written_ = other.written_;
    other.fd_ = -1;
    other.tmp_.clear();
  }
  return *this;
}

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

Status AtomicFile::open(const std::string& target, mode_t mode) {
  discard();
  if (target.empty()) return InvalidArgument("atomic write: empty file name");
  target_ = target;
  written_ = 0;
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const uint64_t salt = (uint64_t(rd()) << 32) ^ rd();
    std::string name = temp_name_for(target, salt);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return IoError("cannot create a temporary file beside " + target + ": " + errno_text(errno));
    }
    fd_ = fd;
    tmp_ = std::move(name);
    // The umask may have narrowed the mode; the caller's mode is what the
    // target gets (it is only ever narrower than or equal to what was asked).
    if (::fchmod(fd_, mode) != 0) {
      const int err = errno;
      discard();
      return IoError("cannot set the mode of a temporary file beside " + target + ": " + errno_text(err));
    }
    return Status::Ok();
  }
  return IoError("cannot create a temporary file beside " + target + ": too many name clashes");
}

Status AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) return Internal("atomic write: write() before open() or after commit()");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      const std::string tmp = tmp_;
      discard();
      return IoError("cannot write " + target_ + " (temporary file " + tmp + "): " + errno_text(err));
    }
    p += w;
    n -= (size_t)w;
    written_ += (uint64_t)w;
  }
  return Status::Ok();
}

Status AtomicFile::commit(Mode how) {
  if (fd_ < 0) return Internal("atomic write: commit() before open() or twice");
  if (::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    return IoError("cannot write " + target_ + ": fsync failed: " + errno_text(err));
  }
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    const int err = errno;
    discard();
    return IoError("cannot write " + target_ + ": close failed: " + errno_text(err));
  }
  const int renamed = how == Mode::kReplace
                          ? ::rename(tmp_.c_str(), target_.c_str())
                          : ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
  if (renamed != 0) {
    const int err = errno;
    discard();
    if (err == EEXIST) return InvalidArgument(target_ + " exists already (not overwritten)");
    return IoError("cannot rename a temporary file over " + target_ + ": " + errno_text(err));
  }
  tmp_.clear();
  return fsync_directory(parent_dir(target_));
}

Status fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open directory " + dir + " to sync it: " + errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // EINVAL: a file system that cannot sync directories (the rename is done).
  if (rc != 0 && err != EINVAL) return IoError("cannot sync directory " + dir + ": " + errno_text(err));
  return Status::Ok();
}

Status write_file_atomic(const std::string& target, std::string_view contents, mode_t mode, AtomicFile::Mode how) {
  AtomicFile f;
  STRIDE_RETURN_IF_ERROR(f.open(target, mode));
  STRIDE_RETURN_IF_ERROR(f.write(contents));
  return f.commit(how);
}

Status copy_file_atomic(const std::string& src, const std::string& target, mode_t mode) {
  const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return IoError("cannot open " + src + ": " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  AtomicFile out;
  STRIDE_RETURN_IF_ERROR(out.open(target, mode));
  std::vector<uint8_t> buf(size_t(4) << 20);
  for (;;) {
    const ssize_t r = ::read(in, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot read " + src + ": " + errno_text(errno));
    }
    if (r == 0) break;
    STRIDE_RETURN_IF_ERROR(out.write(buf.data(), (size_t)r));
  }
  return out.commit();
}

}  // namespace stride
