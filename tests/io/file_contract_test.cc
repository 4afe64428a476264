// The File/FileSystem contract of sm/io/file.h, checked against both implementations (POSIX
// and in-memory fault injection) so that code tested on one behaves the same on the other.
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sm/io/aligned_buffer.h"
#include "sm/io/file.h"
#include "tests/io/io_test_util.h"

using namespace sm;
using sm::io::AlignedBuffer;
using sm::test::CreateOptions;
using sm::test::TestFs;

namespace {
bool Contains(const Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("files round trip data and report sizes", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::unique_ptr<io::File> file;
  REQUIRE(t.fs->Open(t.Path("a"), CreateOptions(), &file).ok());
  REQUIRE(file->path() == t.Path("a"));
  AlignedBuffer out(16384), in(16384);
  for (size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<char>(i * 7 + 3);
  REQUIRE(file->Write(4096, out.data(), 16384).ok());
  uint64_t size = 0;
  REQUIRE(file->Size(&size).ok());
  REQUIRE(size == 4096 + 16384);
  REQUIRE(file->Read(4096, in.data(), 16384).ok());
  REQUIRE(std::memcmp(in.data(), out.data(), 16384) == 0);
  // The hole before the write reads as zeros.
  REQUIRE(file->Read(0, in.data(), 4096).ok());
  REQUIRE(std::all_of(in.data(), in.data() + 4096, [](char c) { return c == 0; }));
  REQUIRE(file->Sync().ok());

  // Reading across the end: Read fails naming path and offset, ReadUpTo returns the count.
  Status s = file->Read(16384, in.data(), 8192);
  REQUIRE(s.IsIOError());
  REQUIRE(Contains(s, t.Path("a")));
  REQUIRE(Contains(s, "16384"));
  size_t got = 99;
  REQUIRE(file->ReadUpTo(16384, in.data(), 8192, &got).ok());
  REQUIRE(got == 4096);
  REQUIRE(file->ReadUpTo(1 << 20, in.data(), 4096, &got).ok());
  REQUIRE(got == 0);
}

TEST_CASE("Resize grows with zeros and shrinks", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::unique_ptr<io::File> file;
  REQUIRE(t.fs->Open(t.Path("r"), CreateOptions(), &file).ok());
  AlignedBuffer buf(8192);
  std::memset(buf.data(), 0x5a, 8192);
  REQUIRE(file->Write(0, buf.data(), 8192).ok());
  REQUIRE(file->Resize(4096).ok());
  REQUIRE(file->Resize(65536).ok());
  uint64_t size = 0;
  REQUIRE(file->Size(&size).ok());
  REQUIRE(size == 65536);
  REQUIRE(file->Read(0, buf.data(), 8192).ok());
  for (size_t i = 0; i < 8192; ++i) REQUIRE(buf.data()[i] == (i < 4096 ? 0x5a : 0));
}

namespace {
// Whether any extent of the file at `path` is allocated but unwritten (FIEMAP); nullopt where
// the file system cannot say.
std::optional<bool> HasUnwrittenExtents(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return std::nullopt;
  constexpr int kExtents = 256;
  std::vector<char> buf(sizeof(fiemap) + kExtents * sizeof(fiemap_extent));
  auto* map = reinterpret_cast<fiemap*>(buf.data());
  map->fm_length = FIEMAP_MAX_OFFSET;
  map->fm_flags = FIEMAP_FLAG_SYNC;
  map->fm_extent_count = kExtents;
  const int rc = ::ioctl(fd, FS_IOC_FIEMAP, map);
  ::close(fd);
  if (rc != 0 || map->fm_mapped_extents == kExtents) return std::nullopt;
  for (uint32_t i = 0; i < map->fm_mapped_extents; ++i) {
    if (map->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("ResizeWritten grows with zeros, written where the file system tells", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::unique_ptr<io::File> file;
  REQUIRE(t.fs->Open(t.Path("w"), CreateOptions(/*direct=*/false), &file).ok());
  std::string head(5000, '\x5a');
  REQUIRE(file->Write(0, head.data(), head.size()).ok());
  constexpr uint64_t kSize = (3u << 20) + 8192;  // more than one chunk of zeros
  REQUIRE(file->ResizeWritten(kSize).ok());
  REQUIRE(file->Sync().ok());
  uint64_t size = 0;
  REQUIRE(file->Size(&size).ok());
  REQUIRE(size == kSize);
  std::string back(kSize, '\1');
  REQUIRE(file->Read(0, back.data(), kSize).ok());
  REQUIRE(back.compare(0, head.size(), head) == 0);
  REQUIRE(std::all_of(back.begin() + head.size(), back.end(), [](char c) { return c == 0; }));
  if (posix) {
    // The bytes above the old size's block were written, so no extent is left unwritten
    // (on a file system that reports extents; the partial block may stay as it was).
    std::optional<bool> unwritten = HasUnwrittenExtents(t.Path("w"));
    if (unwritten.has_value()) REQUIRE_FALSE(*unwritten);
    // Contrast: Resize leaves the new blocks allocated only, where fallocate exists.
    std::unique_ptr<io::File> plain;
    REQUIRE(t.fs->Open(t.Path("p"), CreateOptions(/*direct=*/false), &plain).ok());
    REQUIRE(plain->Resize(kSize).ok());
    std::optional<bool> plain_unwritten = HasUnwrittenExtents(t.Path("p"));
    if (unwritten.has_value() && plain_unwritten.has_value()) REQUIRE(*plain_unwritten);
  }
}

TEST_CASE("misaligned direct I/O is rejected up front", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::unique_ptr<io::File> file;
  REQUIRE(t.fs->Open(t.Path("m"), CreateOptions(/*direct=*/true), &file).ok());
  AlignedBuffer buf(3 * 4096);
  Status bad_buffer = file->Write(0, buf.data() + 1, 4096);
  Status bad_offset = file->Write(512, buf.data(), 4096);
  Status bad_length = file->Write(0, buf.data(), 1000);
  Status bad_read = file->Read(0, buf.data() + 512, 4096);
  for (const Status* s : {&bad_buffer, &bad_offset, &bad_length, &bad_read}) {
    REQUIRE(s->IsInvalidArgument());
    REQUIRE(Contains(*s, t.Path("m")));
    REQUIRE(Contains(*s, "aligned"));
  }
  uint64_t size = 1;
  REQUIRE(file->Size(&size).ok());
  REQUIRE(size == 0);  // nothing reached the file

  // Without direct I/O any alignment is fine.
  std::unique_ptr<io::File> buffered;
  REQUIRE(t.fs->Open(t.Path("b"), CreateOptions(/*direct=*/false), &buffered).ok());
  REQUIRE(buffered->Write(3, "hello", 5).ok());
  char back[5];
  REQUIRE(buffered->Read(3, back, 5).ok());
  REQUIRE(std::memcmp(back, "hello", 5) == 0);
}

TEST_CASE("open flags: create, exclusive, missing, read-only", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::unique_ptr<io::File> file;
  io::OpenOptions plain;
  Status missing = t.fs->Open(t.Path("nope"), plain, &file);
  REQUIRE(missing.IsNotFound());
  REQUIRE(Contains(missing, t.Path("nope")));
  REQUIRE(file == nullptr);

  io::OpenOptions exclusive = CreateOptions();
  exclusive.exclusive = true;
  REQUIRE(t.fs->Open(t.Path("x"), exclusive, &file).ok());
  AlignedBuffer buf(4096);
  std::memset(buf.data(), 1, 4096);
  REQUIRE(file->Write(0, buf.data(), 4096).ok());
  file.reset();
  REQUIRE(t.fs->Open(t.Path("x"), exclusive, &file).IsIOError());

  io::OpenOptions read_only;
  read_only.read_only = true;
  REQUIRE(t.fs->Open(t.Path("x"), read_only, &file).ok());
  REQUIRE(file->Write(0, buf.data(), 4096).IsInvalidArgument());
  REQUIRE(file->Resize(0).IsInvalidArgument());
  REQUIRE(file->Read(0, buf.data(), 4096).ok());
  REQUIRE(buf.data()[4095] == 1);

  // A file in a directory that does not exist cannot be created.
  REQUIRE(t.fs->Open(t.Path("no/such/dir/f"), CreateOptions(), &file).IsNotFound());
}

TEST_CASE("directories, rename, delete, exists", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  REQUIRE(t.fs->CreateDir(t.Path("d/e/f")).ok());
  REQUIRE(t.fs->CreateDir(t.Path("d/e")).ok());  // exists: fine
  std::unique_ptr<io::File> file;
  for (const char* name : {"d/b", "d/a", "d/c"}) {
    REQUIRE(t.fs->Open(t.Path(name), CreateOptions(), &file).ok());
  }
  std::vector<std::string> names;
  REQUIRE(t.fs->ListDir(t.Path("d"), &names).ok());
  REQUIRE(names == std::vector<std::string>{"a", "b", "c", "e"});
  REQUIRE(t.fs->SyncDir(t.Path("d")).ok());

  // Rename replaces the target atomically; the old name is gone.
  AlignedBuffer buf(4096);
  std::memset(buf.data(), 'A', 4096);
  REQUIRE(t.fs->Open(t.Path("d/a"), CreateOptions(), &file).ok());
  REQUIRE(file->Write(0, buf.data(), 4096).ok());
  file.reset();
  REQUIRE(t.fs->Rename(t.Path("d/a"), t.Path("d/b")).ok());
  bool exists = true;
  REQUIRE(t.fs->Exists(t.Path("d/a"), &exists).ok());
  REQUIRE(!exists);
  REQUIRE(t.fs->Open(t.Path("d/b"), io::OpenOptions{}, &file).ok());
  std::memset(buf.data(), 0, 4096);
  REQUIRE(file->Read(0, buf.data(), 4096).ok());
  REQUIRE(buf.data()[0] == 'A');
  file.reset();

  REQUIRE(t.fs->Delete(t.Path("d/b")).ok());
  REQUIRE(t.fs->Delete(t.Path("d/b")).IsNotFound());
  REQUIRE(t.fs->Rename(t.Path("d/b"), t.Path("d/z")).IsNotFound());
  REQUIRE(t.fs->Delete(t.Path("d/e/f")).ok());  // an empty directory
  REQUIRE(t.fs->Exists(t.Path("d/e"), &exists).ok());
  REQUIRE(exists);
  REQUIRE(t.fs->ListDir(t.Path("d"), &names).ok());
  REQUIRE(names == std::vector<std::string>{"c", "e"});
  REQUIRE(t.fs->ListDir(t.Path("nope"), &names).IsNotFound());
}

TEST_CASE("a file lock is exclusive until released", "[unit][io]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  const std::string path = t.Path("LOCK");
  std::unique_ptr<io::FileLock> first, second;
  REQUIRE(t.fs->LockFile(path, &first).ok());
  bool exists = false;
  REQUIRE(t.fs->Exists(path, &exists).ok());
  CHECK(exists);  // created by the lock
  Status busy = t.fs->LockFile(path, &second);
  CHECK(busy.code() == Status::Code::kBusy);
  CHECK(Contains(busy, path));
  CHECK(second == nullptr);
  first.reset();
  REQUIRE(t.fs->LockFile(path, &second).ok());
}

// What another process sees: flock(2) from a forked child, which does nothing else.
TEST_CASE("a POSIX file lock is seen by other processes", "[unit][io]") {
  TestFs t(/*posix=*/true);
  const std::string path = t.Path("LOCK");
  auto other_process_can_lock = [&path] {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int fd = ::open(path.c_str(), O_RDWR);
      ::_exit(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
  };
  std::unique_ptr<io::FileLock> lock;
  REQUIRE(t.fs->LockFile(path, &lock).ok());
  CHECK_FALSE(other_process_can_lock());
  lock.reset();
  CHECK(other_process_can_lock());
}
