// ForwardingFileSystem and ForwardingFile: pass every call through to another FileSystem, so
// that a test can override just the call it wants to slow down or fail. GatedWriteFileSystem
// holds one write, so that a test can act while it is in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sm/io/file.h"

namespace sm::test {

class ForwardingFile : public io::File {
 public:
  explicit ForwardingFile(std::unique_ptr<io::File> inner) : inner_(std::move(inner)) {}
  Status Read(uint64_t off, void* buf, size_t len) override { return inner_->Read(off, buf, len); }
  Status ReadUpTo(uint64_t off, void* buf, size_t len, size_t* got) override {
    return inner_->ReadUpTo(off, buf, len, got);
  }
  Status Write(uint64_t off, const void* buf, size_t len) override {
    return inner_->Write(off, buf, len);
  }
  Status Sync() override { return inner_->Sync(); }
  Status Size(uint64_t* bytes) override { return inner_->Size(bytes); }
  Status Resize(uint64_t bytes) override { return inner_->Resize(bytes); }
  Status ResizeWritten(uint64_t bytes) override { return inner_->ResizeWritten(bytes); }
  const std::string& path() const override { return inner_->path(); }

 private:
  std::unique_ptr<io::File> inner_;
};

class ForwardingFileSystem : public io::FileSystem {
 public:
  explicit ForwardingFileSystem(io::FileSystem* base) : base_(base) {}
  Status Open(const std::string& path, const io::OpenOptions& options,
              std::unique_ptr<io::File>* file) override {
    std::unique_ptr<io::File> inner;
    SM_TRY(base_->Open(path, options, &inner));
    *file = WrapFile(std::move(inner));
    return Status::OK();
  }
  Status Exists(const std::string& p, bool* e) override { return base_->Exists(p, e); }
  Status Delete(const std::string& p) override { return base_->Delete(p); }
  Status Rename(const std::string& f, const std::string& t) override { return base_->Rename(f, t); }
  Status CreateDir(const std::string& p) override { return base_->CreateDir(p); }
  Status ListDir(const std::string& p, std::vector<std::string>* n) override {
    return base_->ListDir(p, n);
  }
  Status SyncDir(const std::string& p) override { return base_->SyncDir(p); }
  Status LockFile(const std::string& p, std::unique_ptr<io::FileLock>* l) override {
    return base_->LockFile(p, l);
  }

 protected:
  // Wraps each opened file; the default returns it unchanged.
  virtual std::unique_ptr<io::File> WrapFile(std::unique_ptr<io::File> inner) { return inner; }

 private:
  io::FileSystem* base_;
};

// Holds the first write after arm() to a file whose path contains path_filter (empty: any
// file) until release(), so that a test can act while that write is in flight (e.g. start a
// second write-back of the same page, or fail a rollback during a checkpoint's page writes).
class GatedWriteFileSystem final : public ForwardingFileSystem {
 public:
  explicit GatedWriteFileSystem(io::FileSystem* base, std::string path_filter = "")
      : ForwardingFileSystem(base), path_filter_(std::move(path_filter)) {}
  void arm() { armed_ = true; }
  void release() { released_ = true; }
  bool held() const { return held_; }

 protected:
  std::unique_ptr<io::File> WrapFile(std::unique_ptr<io::File> inner) override {
    if (inner->path().find(path_filter_) == std::string::npos) return inner;
    return std::make_unique<GatedFile>(this, std::move(inner));
  }

 private:
  class GatedFile final : public ForwardingFile {
   public:
    GatedFile(GatedWriteFileSystem* fs, std::unique_ptr<io::File> inner)
        : ForwardingFile(std::move(inner)), fs_(fs) {}
    Status Write(uint64_t off, const void* buf, size_t len) override {
      if (fs_->armed_.exchange(false)) {
        fs_->held_ = true;
        while (!fs_->released_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return ForwardingFile::Write(off, buf, len);
    }

   private:
    GatedWriteFileSystem* fs_;
  };
  const std::string path_filter_;
  std::atomic<bool> armed_{false}, held_{false}, released_{false};
};

}  // namespace sm::test
