// Page-free records: encoding, logging, and the redo handler.
#include "sm/txn/page_frees.h"

#include <mutex>
#include <string>

#include "sm/common/assert.h"
#include "sm/common/coding.h"
#include "sm/txn/record_handlers.h"
#include "sm/txn/txn_manager.h"

namespace sm::txn {

namespace {

Status BadFrees(const log::LogRecordView& record, const std::string& what) {
  return Status::Corruption("log record at LSN " + std::to_string(record.lsn.value()) +
                            " (page frees): " + what);
}

Status RedoPageFrees(RedoContext& ctx) {
  const log::LogRecordView& record = ctx.record();
  ByteReader in(record.payload);
  uint32_t count = 0;
  if (!in.GetFixed32(&count) || count == 0 || count > kMaxPageFreesPerRecord) {
    return BadFrees(record, "bad page count");
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t id = 0;
    if (!in.GetFixed64(&id)) return BadFrees(record, "truncated at page " + std::to_string(i));
    SM_TRY(ctx.Free(PageId(id)));
  }
  if (!in.done()) return BadFrees(record, "trailing bytes");
  return Status::OK();
}

}  // namespace

void RegisterPageFreeHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    RecordHandler handler;
    handler.name = "page_frees";
    handler.redo = &RedoPageFrees;
    RegisterRecordHandler(log::RecordType::kPageRedo, kSubtypePageFrees, handler);
  });
}

Status LogPageFrees(TxnManager* txns, std::span<const PageId> pages) {
  SM_ASSERT(!pages.empty() && pages.size() <= kMaxPageFreesPerRecord);
  std::string payload;
  payload.reserve(4 + 8 * pages.size());
  PutFixed32(&payload, static_cast<uint32_t>(pages.size()));
  for (PageId id : pages) PutFixed64(&payload, id.value());
  log::LogRecord record;
  record.type = log::RecordType::kPageRedo;
  record.subtype = kSubtypePageFrees;
  record.payload = payload;
  Lsn end;
  return txns->LogSystem(&record, &end);
}

}  // namespace sm::txn
