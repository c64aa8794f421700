#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stride {

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), fd_(other.fd_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.fd_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

void MappedFile::reset() {
  if (data_ && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool MappedFile::read_at(const void* p, uint64_t n, void* dst) const {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  if (!data_ || fd_ < 0 || b < data_ || n > size_ || b + n > data_ + size_) return false;
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, static_cast<uint8_t*>(dst) + done, (size_t)(n - done),
                                (off_t)((uint64_t)(b - data_) + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += (uint64_t)got;
  }
  return true;
}

bool MappedFile::drop_resident(const void* p, uint64_t n) const {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  if (!data_ || b < data_ || n > size_ || b + n > data_ + size_) return false;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t lo = ((uintptr_t)b + page - 1) & ~(page - 1);
  const uintptr_t hi = ((uintptr_t)b + n) & ~(page - 1);
  // A private read-only file map: dropped pages refault from the file. What
  // is read back is read sparsely (the rows of a tied embedding), so the
  // range also loses readahead and fault-around, which would map up to
  // hundreds of KiB around every row looked up.
  if (hi > lo) {
    madvise((void*)lo, hi - lo, MADV_DONTNEED);
    madvise((void*)lo, hi - lo, MADV_RANDOM);
  }
  return true;
}

Expected<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no such file: " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return IoError("cannot stat " + path + ": " + err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("not a regular file: " + path);
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = (uint64_t)st.st_size;
  if (f.size_ > 0) {
    void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      return IoError("cannot mmap " + path + ": " + err);
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  f.fd_ = fd;  // kept for read_at
  return f;
}

}  // namespace stride
