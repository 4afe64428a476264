// Directory helpers for tests on any io::FileSystem (in practice the in-memory
// FaultInjectionFileSystem): copy a database directory, delete one, read and write whole files.
//
// A name in a directory is taken for a subdirectory when ListDir accepts it, else for a file.
// Copies are made durable (Sync), so a later SimulateCrash keeps them.
#pragma once

#include <string>
#include <vector>

#include "sm/common/status.h"
#include "sm/io/file.h"

namespace sm::test {

inline io::OpenOptions BufferedOptions(bool create) {
  io::OpenOptions options;
  options.create = create;
  options.direct = false;  // whole files at any offset and length
  return options;
}

[[nodiscard]] inline Status ReadWholeFile(io::FileSystem* fs, const std::string& path,
                                          std::string* bytes) {
  std::unique_ptr<io::File> file;
  SM_TRY(fs->Open(path, BufferedOptions(false), &file));
  uint64_t size = 0;
  SM_TRY(file->Size(&size));
  bytes->assign(size, '\0');
  return size == 0 ? Status::OK() : file->Read(0, bytes->data(), size);
}

// Replaces the file's contents (creating it if needed) and syncs.
[[nodiscard]] inline Status WriteWholeFile(io::FileSystem* fs, const std::string& path,
                                           const std::string& bytes) {
  std::unique_ptr<io::File> file;
  SM_TRY(fs->Open(path, BufferedOptions(true), &file));
  SM_TRY(file->Resize(0));
  if (!bytes.empty()) SM_TRY(file->Write(0, bytes.data(), bytes.size()));
  return file->Sync();
}

[[nodiscard]] inline bool IsDirectory(io::FileSystem* fs, const std::string& path) {
  std::vector<std::string> names;
  Status s = fs->ListDir(path, &names);
  return s.ok();
}

// Copies the tree at `from` to `to` (created; files in it are replaced).
[[nodiscard]] inline Status CopyDir(io::FileSystem* fs, const std::string& from,
                                    const std::string& to) {
  SM_TRY(fs->CreateDir(to));
  std::vector<std::string> names;
  SM_TRY(fs->ListDir(from, &names));
  for (const std::string& name : names) {
    std::string src = from + "/" + name, dst = to + "/" + name;
    if (IsDirectory(fs, src)) {
      SM_TRY(CopyDir(fs, src, dst));
      continue;
    }
    std::string bytes;
    SM_TRY(ReadWholeFile(fs, src, &bytes));
    SM_TRY(WriteWholeFile(fs, dst, bytes));
  }
  return Status::OK();
}

// Deletes the tree at `path`; OK if it does not exist.
[[nodiscard]] inline Status DeleteDir(io::FileSystem* fs, const std::string& path) {
  bool exists = false;
  SM_TRY(fs->Exists(path, &exists));
  if (!exists) return Status::OK();
  std::vector<std::string> names;
  SM_TRY(fs->ListDir(path, &names));
  for (const std::string& name : names) {
    std::string child = path + "/" + name;
    if (IsDirectory(fs, child)) {
      SM_TRY(DeleteDir(fs, child));
    } else {
      SM_TRY(fs->Delete(child));
    }
  }
  return fs->Delete(path);
}

}  // namespace sm::test
