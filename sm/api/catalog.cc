// Catalog entries and the meta file.
//
// Catalog entry (the value under a table's name), little-endian:
//   u8 entry version (kEntryVersion) | u8 kind (TableKind) | u32 table id | u64 root page id
// A pending-drop entry (drop.cc) has the same layout with kind kDropped, under
// PendingDropKey(id) = "\0drop" + u32 id big-endian (so the entries sort by id, before every
// user name).
// A table's value tree (large_values.h) has the same layout with kind kValues and an id of its
// own, under ValueTreeName(owner id) = "\0values" + u32 owner id big-endian.
//
// Meta file "sm.meta", one 4096-byte block, little-endian:
//   +0  char[8] magic "SMDBMETA"
//   +8  u32     format version (kMetaVersion)
//   +12 u32     page size (kPageBytes): a database is refused by code compiled with another
//   +16 u64     catalog root page id
//   +24 ...     zeros
//   +4092 u32   CRC32C of bytes [0, 4092)
// It is written once, when a database is created, as the last step (write a temporary file,
// sync it, rename it into place, sync the directory): a directory without it is a creation
// that did not finish, which Open starts over.
#include <cstring>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/common/coding.h"
#include "sm/common/crc32c.h"
#include "sm/io/aligned_buffer.h"
#include "sm/page/page.h"

namespace sm::api {

namespace {
constexpr char kMetaMagic[8] = {'S', 'M', 'D', 'B', 'M', 'E', 'T', 'A'};
constexpr uint32_t kMetaVersion = 1;
constexpr size_t kMetaBytes = 4096;
constexpr uint8_t kEntryVersion = 1;

std::string MetaPath(const std::string& dir) { return dir + "/sm.meta"; }
}  // namespace

std::string EncodeCatalogEntry(const CatalogEntry& entry) {
  std::string out;
  out.push_back(static_cast<char>(kEntryVersion));
  out.push_back(static_cast<char>(entry.kind));
  PutFixed32(&out, entry.id);
  PutFixed64(&out, entry.root.value());
  return out;
}

Status DecodeCatalogEntry(std::string_view name, std::string_view bytes, CatalogEntry* entry) {
  ByteReader in(bytes);
  uint8_t version = 0, kind = 0;
  uint32_t id = 0;
  uint64_t root = 0;
  if (!in.GetFixed8(&version) || !in.GetFixed8(&kind) || !in.GetFixed32(&id) ||
      !in.GetFixed64(&root) || !in.done() || version != kEntryVersion ||
      (kind != static_cast<uint8_t>(TableKind::kTable) &&
       kind != static_cast<uint8_t>(TableKind::kIndex) &&
       kind != static_cast<uint8_t>(TableKind::kDropped) &&
       kind != static_cast<uint8_t>(TableKind::kValues)) ||
      id < kFirstUserTableId || root == 0) {
    return Status::Corruption("catalog entry of table '" + std::string(name) + "' is damaged");
  }
  entry->kind = static_cast<TableKind>(kind);
  entry->id = id;
  entry->root = PageId(root);
  return Status::OK();
}

std::string PendingDropKey(uint32_t table_id) {
  std::string key("\0drop", 5);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(table_id >> shift));
  return key;
}

namespace {
constexpr std::string_view kValueTreePrefix("\0values", 7);
}  // namespace

std::string ValueTreeName(uint32_t owner_id) {
  std::string key(kValueTreePrefix);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(owner_id >> shift));
  return key;
}

bool ParseValueTreeName(std::string_view name, uint32_t* owner_id) {
  if (name.size() != kValueTreePrefix.size() + 4 || !name.starts_with(kValueTreePrefix)) {
    return false;
  }
  *owner_id = 0;
  for (size_t i = kValueTreePrefix.size(); i < name.size(); ++i) {
    *owner_id = (*owner_id << 8) | static_cast<uint8_t>(name[i]);
  }
  return true;
}

Status WriteMeta(io::FileSystem* fs, const std::string& dir, const MetaData& meta) {
  io::AlignedBuffer block(kMetaBytes);
  char* p = block.data();
  std::memcpy(p, kMetaMagic, 8);
  uint32_t version = kMetaVersion, page_bytes = kPageBytes;
  uint64_t root = meta.catalog_root.value();
  std::memcpy(p + 8, &version, 4);
  std::memcpy(p + 12, &page_bytes, 4);
  std::memcpy(p + 16, &root, 8);
  uint32_t crc = Crc32c(p, kMetaBytes - 4);
  std::memcpy(p + kMetaBytes - 4, &crc, 4);

  std::string tmp = MetaPath(dir) + ".tmp";
  io::OpenOptions open;
  open.create = true;
  open.direct = false;
  std::unique_ptr<io::File> file;
  SM_TRY(fs->Open(tmp, open, &file));
  SM_TRY(file->Resize(0));
  SM_TRY(file->Write(0, p, kMetaBytes));
  SM_TRY(file->Sync());
  file.reset();
  SM_TRY(fs->Rename(tmp, MetaPath(dir)));
  return fs->SyncDir(dir);
}

Status ReadMeta(io::FileSystem* fs, const std::string& dir, MetaData* meta) {
  std::string path = MetaPath(dir);
  bool exists = false;
  SM_TRY(fs->Exists(path, &exists));
  if (!exists) return Status::NotFound(path + ": no such file");
  io::OpenOptions open;
  open.read_only = true;
  open.direct = false;
  std::unique_ptr<io::File> file;
  SM_TRY(fs->Open(path, open, &file));
  io::AlignedBuffer block(kMetaBytes);
  size_t got = 0;
  SM_TRY(file->ReadUpTo(0, block.data(), kMetaBytes, &got));
  const char* p = block.data();
  uint32_t version = 0, page_bytes = 0, crc = 0;
  uint64_t root = 0;
  std::memcpy(&version, p + 8, 4);
  std::memcpy(&page_bytes, p + 12, 4);
  std::memcpy(&root, p + 16, 8);
  std::memcpy(&crc, p + kMetaBytes - 4, 4);
  if (got != kMetaBytes || std::memcmp(p, kMetaMagic, 8) != 0) {
    return Status::Corruption(path + ": not a database meta file");
  }
  if (crc != Crc32c(p, kMetaBytes - 4)) return Status::Corruption(path + ": checksum mismatch");
  if (version != kMetaVersion) {
    return Status::InvalidArgument(path + ": format version " + std::to_string(version) +
                                   ", this build reads " + std::to_string(kMetaVersion));
  }
  if (page_bytes != kPageBytes) {
    return Status::InvalidArgument(path + ": page size " + std::to_string(page_bytes) +
                                   ", this build uses " + std::to_string(kPageBytes));
  }
  if (root == 0) return Status::Corruption(path + ": no catalog root");
  meta->catalog_root = PageId(root);
  return Status::OK();
}

}  // namespace sm::api
