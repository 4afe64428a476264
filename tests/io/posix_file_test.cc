// PosixFileSystem specifics: I/O through the reactor from fibers on several workers and from
// a plain thread, direct I/O, and device errors reaching the caller as Status.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "sm/io/aligned_buffer.h"
#include "sm/io/posix_file.h"
#include "tests/io/io_test_util.h"
#include "threads/baton.h"
#include "threads/reactor.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm;
using sm::io::AlignedBuffer;
using sm::test::CreateOptions;
using sm::test::MakeRuntime;
using sm::test::ScratchDir;

TEST_CASE("POSIX file I/O from many fibers on two workers", "[unit][io]") {
  ScratchDir dir;
  std::unique_ptr<io::File> file;
  REQUIRE(io::FileSystem::Default()->Open(dir / "data", CreateOptions(), &file).ok());
  constexpr int kFibers = 32;
  constexpr size_t kBlock = 8192;
  REQUIRE(file->Resize(kFibers * kBlock).ok());
  auto rt = MakeRuntime(2);
  std::atomic<int> failures{0};
  threads::WaitGroup wg;
  wg.Add(kFibers);
  for (int f = 0; f < kFibers; ++f) {
    rt->Spawn([&, f] {
      AlignedBuffer out(kBlock), in(kBlock);
      std::memset(out.data(), 'a' + f % 26, kBlock);
      std::memcpy(out.data(), &f, sizeof(f));
      uint64_t offset = uint64_t(f) * kBlock;
      if (!file->Write(offset, out.data(), kBlock).ok()) ++failures;
      if (!file->Sync().ok()) ++failures;
      if (!file->Read(offset, in.data(), kBlock).ok()) ++failures;
      if (std::memcmp(in.data(), out.data(), kBlock) != 0) ++failures;
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  REQUIRE(std::filesystem::file_size(dir / "data") == kFibers * kBlock);
}

TEST_CASE("POSIX metadata calls and Resize work from a fiber", "[unit][io]") {
  ScratchDir dir;
  io::FileSystem* fs = io::FileSystem::Default();
  auto rt = MakeRuntime(1);
  std::string results[5];
  threads::Baton done;
  rt->Spawn([&] {
    std::unique_ptr<io::File> file;
    results[0] = fs->CreateDir(dir / "sub/deeper").ToString();
    results[1] = fs->Open(dir / "sub/f", CreateOptions(), &file).ToString();
    results[2] = file->Resize(1 << 20).ToString();
    results[3] = fs->Rename(dir / "sub/f", dir / "sub/g").ToString();
    results[4] = fs->SyncDir(dir / "sub").ToString();
    done.Post();
  });
  done.Wait();
  rt->Shutdown();
  for (const std::string& r : results) REQUIRE(r == "OK");
  REQUIRE(std::filesystem::file_size(dir / "sub/g") == (1 << 20));
}

TEST_CASE("direct I/O is used where the file system has it", "[unit][io]") {
  ScratchDir dir;
  std::unique_ptr<io::File> file;
  REQUIRE(io::FileSystem::Default()->Open(dir / "d", CreateOptions(true), &file).ok());
  auto* posix = dynamic_cast<io::PosixFile*>(file.get());
  REQUIRE(posix != nullptr);
  // Whether O_DIRECT stuck depends on the file system; it must agree with what the kernel
  // reports, and a buffered request must stay buffered.
  int fd = open((dir / "d").c_str(), O_RDONLY | O_DIRECT);
  bool fs_has_direct = fd >= 0;
  if (fd >= 0) close(fd);
  REQUIRE(posix->direct_io() == fs_has_direct);
  std::unique_ptr<io::File> buffered;
  REQUIRE(io::FileSystem::Default()->Open(dir / "d", CreateOptions(false), &buffered).ok());
  REQUIRE(!dynamic_cast<io::PosixFile*>(buffered.get())->direct_io());
}

TEST_CASE("device errors reach the caller as Status naming the file", "[unit][io]") {
  ScratchDir dir;
  std::unique_ptr<io::File> file;
  REQUIRE(io::FileSystem::Default()->Open(dir / "e", CreateOptions(), &file).ok());
  AlignedBuffer buf(4096);
  threads::Reactor::TEST_InjectError(EIO, 0);
  Status write = file->Write(0, buf.data(), 4096);
  REQUIRE(write.IsIOError());
  REQUIRE(std::string(write.message()).find(dir / "e") != std::string::npos);
  REQUIRE(std::string(write.message()).find("Input/output error") != std::string::npos);
  threads::Reactor::TEST_InjectError(ENOSPC, 0);
  REQUIRE(file->Write(0, buf.data(), 4096).IsNoSpace());
  threads::Reactor::TEST_InjectError(EIO, 0);
  REQUIRE(file->Sync().IsIOError());
  REQUIRE(file->Write(0, buf.data(), 4096).ok());  // injections are one-shot
}
