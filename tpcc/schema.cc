// Table names, the meta row, and opening a loaded database: see schema.h.
#include "tpcc/schema.h"

#include <chrono>
#include <string>

namespace sm::tpcc {

const char* TableName(TableId table) {
  switch (table) {
    case TableId::kWarehouse: return "tpcc.warehouse";
    case TableId::kDistrict: return "tpcc.district";
    case TableId::kCustomer: return "tpcc.customer";
    case TableId::kCustomerByName: return "tpcc.customer_by_name";
    case TableId::kHistory: return "tpcc.history";
    case TableId::kNewOrder: return "tpcc.new_order";
    case TableId::kOrder: return "tpcc.order";
    case TableId::kOrderByCustomer: return "tpcc.order_by_customer";
    case TableId::kOrderLine: return "tpcc.order_line";
    case TableId::kItem: return "tpcc.item";
    case TableId::kStock: return "tpcc.stock";
    case TableId::kMeta: return "tpcc.meta";
    case TableId::kUsertable: return "ycsb.usertable";
  }
  return "tpcc.?";
}

MetaRow DatabaseInfo::ToMeta() const {
  MetaRow m{};
  m.format_version = kMetaFormatVersion;
  m.warehouses = warehouses;
  m.items = scale.items;
  m.customers_per_district = scale.customers_per_district;
  m.c_last_load = load_constants.c_last;
  m.c_id_load = load_constants.c_id;
  m.ol_i_id_load = load_constants.ol_i_id;
  m.load_seed = load_seed;
  m.loaded_at_us = loaded_at_us;
  m.runs = runs;
  return m;
}

DatabaseInfo DatabaseInfo::FromMeta(const MetaRow& m) {
  DatabaseInfo info;
  info.warehouses = m.warehouses;
  info.scale.items = m.items;
  info.scale.customers_per_district = m.customers_per_district;
  info.load_constants.c_last = m.c_last_load;
  info.load_constants.c_id = m.c_id_load;
  info.load_constants.ol_i_id = m.ol_i_id_load;
  info.load_seed = m.load_seed;
  info.loaded_at_us = m.loaded_at_us;
  info.runs = m.runs;
  return info;
}

Status ReadDatabaseInfo(Engine* engine, DatabaseInfo* info) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kReadCommitted));
  std::string value;
  Status s = txn->Get(TableId::kMeta, kMetaKey, &value);
  if (!s.ok()) {
    txn->Abort().PermitUnchecked();  // the read's error is the one to report
    return s;
  }
  SM_TRY(txn->Commit());
  MetaRow meta;
  if (!DecodeRow(value, &meta)) return Status::Corruption("the TPC-C meta row is damaged");
  if (meta.format_version != kMetaFormatVersion) {
    return Status::NotSupported("the TPC-C meta row has format version " +
                                std::to_string(meta.format_version) + ", this driver reads " +
                                std::to_string(kMetaFormatVersion) + ": load again");
  }
  *info = DatabaseInfo::FromMeta(meta);
  return Status::OK();
}

Status OpenLoaded(Engine* engine, uint32_t warehouses, DatabaseInfo* info) {
  bool created = false;
  Status s = engine->OpenSchema(Schema::kTpcc, /*create=*/false, &created);
  if (s.ok()) s = ReadDatabaseInfo(engine, info);
  if (s.IsNotFound()) {
    return Status::NotFound("the database holds no completed TPC-C load: run `tpcc load` first");
  }
  SM_TRY(s);
  if (warehouses != 0 && info->warehouses != warehouses) {
    return Status::InvalidArgument("the database was loaded with " +
                                   std::to_string(info->warehouses) + " warehouses, not " +
                                   std::to_string(warehouses) + ": pass -w " +
                                   std::to_string(info->warehouses) +
                                   " or load another database (--db)");
  }
  return Status::OK();
}

Status RecordRunStart(Engine* engine, DatabaseInfo* info) {
  DatabaseInfo updated = *info;
  updated.runs += 1;
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kSerializable));
  Status s = txn->Update(TableId::kMeta, kMetaKey, EncodeRow(updated.ToMeta()));
  if (!s.ok()) {
    txn->Abort().PermitUnchecked();
    return s;
  }
  SM_TRY(txn->Commit(CommitKind::kDurable));
  *info = updated;
  return Status::OK();
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sm::tpcc
