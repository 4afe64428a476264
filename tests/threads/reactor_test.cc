// The libaio reactor: O_DIRECT round trips from fibers, errors as Status, sync.
#include "threads/reactor.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/test_util.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm::threads;

using sm::test::MakeRuntime;

namespace {
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes)
      : data(static_cast<char*>(std::aligned_alloc(kDirectIoAlignment, bytes))), size(bytes) {}
  ~AlignedBuffer() { std::free(data); }
  char* data;
  size_t size;
};

struct TempFile {
  TempFile() {
    char tmpl[] = "/tmp/sm-reactor-XXXXXX";
    int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    close(fd);
    path = tmpl;
    fd_ = open(path.c_str(), O_RDWR | O_DIRECT);
    if (fd_ < 0) fd_ = open(path.c_str(), O_RDWR);  // a filesystem without O_DIRECT
    REQUIRE(fd_ >= 0);
  }
  ~TempFile() {
    close(fd_);
    std::filesystem::remove(path);
  }
  std::string path;
  int fd_;
};

}  // namespace

TEST_CASE("O_DIRECT writes then reads round trip from many fibers", "[unit][reactor]") {
  TempFile file;
  auto rt = MakeRuntime(2);
  constexpr int kFibers = 64;
  constexpr size_t kBlock = 8192;
  std::atomic<int> failures{0};
  WaitGroup wg;
  wg.Add(kFibers);
  for (int f = 0; f < kFibers; ++f) {
    rt->Spawn([&, f] {
      AlignedBuffer out(kBlock), in(kBlock);
      std::memset(out.data, 'a' + f % 26, kBlock);
      std::memcpy(out.data, &f, sizeof(f));
      if (!Reactor::Write(file.fd_, out.data, kBlock, uint64_t(f) * kBlock).ok()) ++failures;
      if (!Reactor::Sync(file.fd_).ok()) ++failures;
      if (!Reactor::Read(file.fd_, in.data, kBlock, uint64_t(f) * kBlock).ok()) ++failures;
      if (std::memcmp(in.data, out.data, kBlock) != 0) ++failures;
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  REQUIRE(std::filesystem::file_size(file.path) == kFibers * kBlock);
}

TEST_CASE("I/O errors and short transfers come back as Status", "[unit][reactor]") {
  TempFile file;
  auto rt = MakeRuntime(1);
  std::string results[5];
  size_t got = 99;
  sm::threads::Baton done;
  rt->Spawn([&] {
    AlignedBuffer buf(4096);
    std::memset(buf.data, 1, buf.size);
    // Injected EIO on the next write reaches the caller.
    Reactor::TEST_InjectError(EIO, 0);
    results[0] = Reactor::Write(file.fd_, buf.data, 4096, 0).ToString();
    // Reading past the end: an error without `transferred`, a count of 0 with it.
    results[1] = Reactor::Read(file.fd_, buf.data, 4096, 1 << 20).ToString();
    results[2] = Reactor::Read(file.fd_, buf.data, 4096, 1 << 20, &got).ToString();
    // An injected sync failure.
    Reactor::TEST_InjectError(EIO, 0);
    results[3] = Reactor::Sync(file.fd_).ToString();
    // The injection is one-shot: the next write succeeds.
    results[4] = Reactor::Write(file.fd_, buf.data, 4096, 0).ToString();
    done.Post();
  });
  done.Wait();
  rt->Shutdown();
  CHECK(results[0].rfind("IOError", 0) == 0);
  CHECK(results[0].find("Input/output error") != std::string::npos);
  CHECK(results[1].rfind("IOError: short read", 0) == 0);
  CHECK(results[2] == "OK");
  CHECK(got == 0);
  CHECK(results[3].rfind("IOError", 0) == 0);
  CHECK(results[4] == "OK");
}

TEST_CASE("misaligned O_DIRECT I/O fails cleanly", "[unit][reactor]") {
  TempFile file;
  int flags = fcntl(file.fd_, F_GETFL);
  if (!(flags & O_DIRECT))
    SUCCEED("filesystem has no O_DIRECT");
  else {
    auto rt = MakeRuntime(1);
    std::string result;
    sm::threads::Baton done;
    rt->Spawn([&] {
      AlignedBuffer buf(8192);
      result = Reactor::Write(file.fd_, buf.data + 1, 4096, 0).ToString();
      done.Post();
    });
    done.Wait();
    rt->Shutdown();
    REQUIRE(result.find("Invalid argument") != std::string::npos);
  }
}

TEST_CASE("plain threads use the same calls synchronously", "[unit][reactor]") {
  TempFile file;
  AlignedBuffer out(4096), in(4096);
  std::memset(out.data, 7, 4096);
  REQUIRE(Reactor::Write(file.fd_, out.data, 4096, 4096).ok());
  REQUIRE(Reactor::Sync(file.fd_).ok());
  REQUIRE(Reactor::Read(file.fd_, in.data, 4096, 4096).ok());
  REQUIRE(std::memcmp(in.data, out.data, 4096) == 0);
}
