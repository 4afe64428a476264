// DestroyDatabase: removes a database directory, and nothing that is not one.
//
// Invariants:
//   1. Nothing is removed unless the directory has a meta file of ours (the magic and checksum
//      hold; its format version may be another) and no entry beyond kDatabaseEntries: a path
//      given by mistake, or a directory the user also keeps other files in, is refused whole.
//   2. The directory's lock is held from before the first removal to after the last, so a
//      database open in this or another process is refused (Busy), never removed under it.
//   3. The meta file goes last of the database's files: a removal cut short (a crash, an I/O
//      error) leaves a directory that is still recognised as a database, so DestroyDatabase
//      run again finishes it.
#include <string>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/common/assert.h"
#include "sm/io/file.h"
#include "sm/sm.h"

namespace sm {

namespace {

bool IsDatabaseEntry(const std::string& name) {
  for (const char* entry : api::kDatabaseEntries) {
    if (name == entry) return true;
  }
  return false;
}

// Invariant 1: OK if `dir` is a database directory that may be removed.
Status CheckIsDatabase(io::FileSystem* fs, const std::string& dir) {
  api::MetaData meta;
  Status m = api::ReadMeta(fs, dir, &meta);
  // InvalidArgument: a meta file of ours for another format version or page size.
  if (!m.ok() && !m.IsInvalidArgument()) {
    return Status::InvalidArgument(dir + " is not a database, so it was not removed (" +
                                   m.ToString() + ")");
  }
  std::vector<std::string> names;
  SM_TRY(fs->ListDir(dir, &names));
  for (const std::string& name : names) {
    if (!IsDatabaseEntry(name)) {
      return Status::InvalidArgument(dir + " holds " + name +
                                     ", which is not part of a database, so it was not removed");
    }
  }
  return Status::OK();
}

Status DeleteIfExists(io::FileSystem* fs, const std::string& path) {
  bool exists = false;
  SM_TRY(fs->Exists(path, &exists));
  return exists ? fs->Delete(path) : Status::OK();
}

}  // namespace

Status DestroyDatabase(const Options& options) {
  if (options.path.empty()) return Status::InvalidArgument("Options::path is empty");
  io::FileSystem* fs =
      options.file_system != nullptr ? options.file_system : io::FileSystem::Default();
  const std::string& dir = options.path;
  bool exists = false;
  SM_TRY(fs->Exists(dir, &exists));
  if (!exists) return Status::NotFound(dir + ": no such database");
  SM_TRY(CheckIsDatabase(fs, dir));
  std::unique_ptr<io::FileLock> lock;
  SM_TRY(fs->LockFile(api::LockPath(dir), &lock));  // invariant 2
  SM_TRY(fs->Exists(api::LogDir(dir), &exists));
  if (exists) {
    std::vector<std::string> names;
    SM_TRY(fs->ListDir(api::LogDir(dir), &names));
    for (const std::string& name : names) SM_TRY(fs->Delete(api::LogDir(dir) + "/" + name));
    SM_TRY(fs->Delete(api::LogDir(dir)));
  }
  SM_TRY(DeleteIfExists(fs, api::VolumePath(dir)));
  SM_TRY(DeleteIfExists(fs, dir + "/sm.meta.tmp"));
  SM_TRY(fs->Delete(dir + "/sm.meta"));  // invariant 3: the last file that makes it ours
  SM_TRY(fs->Delete(api::LockPath(dir)));
  lock.reset();
  SM_TRY(fs->Delete(dir));
  SM_TRY(fs->Exists(dir, &exists));
  SM_ASSERT(!exists);
  return Status::OK();
}

}  // namespace sm
