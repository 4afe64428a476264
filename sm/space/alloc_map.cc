// AllocMap: bitmap operations and the map-page format (see alloc_map.h).
#include "sm/space/alloc_map.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "sm/common/assert.h"

namespace sm::space {
namespace {

struct MapBodyHeader {
  uint64_t creation_id;
  uint64_t first_page;
  uint64_t sequence;
};
static_assert(sizeof(MapBodyHeader) == kMapBodyHeaderBytes);

constexpr size_t kBitsOffset = kPageHeaderBytes + kMapBodyHeaderBytes;

// Calls fn(page) for every metadata page of range r.
template <typename Fn>
void ForEachMetadataPage(uint64_t range, Fn fn) {
  if (range == 0) fn(uint64_t{0});  // the volume header
  fn(MapSlotPage(range, 0));
  fn(MapSlotPage(range, 1));
}

std::string RangeName(uint64_t range, int slot) {
  return "allocation map page " + std::to_string(MapSlotPage(range, slot)) + " (pages " +
         std::to_string(range * kPagesPerRange) + "..): ";
}

}  // namespace

uint64_t AllocMap::RoundUpForMapSlots(uint64_t page_count) {
  page_count = std::max(page_count, kMinVolumePages);
  uint64_t last_range = (page_count - 1) / kPagesPerRange;
  return std::max(page_count, MapSlotPage(last_range, 1) + 1);
}

bool AllocMap::IsMetadataPage(uint64_t page) {
  uint64_t range = page / kPagesPerRange;
  return page == 0 || page == MapSlotPage(range, 0) || page == MapSlotPage(range, 1);
}

void AllocMap::Grow(uint64_t page_count) {
  SM_ASSERT(page_count >= page_count_);
  SM_ASSERT(page_count == RoundUpForMapSlots(page_count));
  uint64_t old_ranges = range_count();
  page_count_ = page_count;
  words_.resize((page_count + 63) / 64, 0);
  for (uint64_t range = old_ranges; range < range_count(); ++range) {
    dirty_.push_back(true);
    ForEachMetadataPage(range, [this](uint64_t page) { Set(page); });
  }
}

bool AllocMap::AllocateLowest(uint64_t* page) {
  for (size_t w = hint_word_; w < words_.size(); ++w) {
    if (words_[w] == ~uint64_t{0}) continue;
    uint64_t candidate = w * 64 + static_cast<uint64_t>(std::countr_one(words_[w]));
    hint_word_ = w;
    if (candidate >= page_count_) return false;  // the free bits are past the end
    Set(candidate);
    *page = candidate;
    return true;
  }
  hint_word_ = words_.size();
  return false;
}

void AllocMap::Set(uint64_t page) {
  SM_ASSERT(page < page_count_);
  uint64_t bit = uint64_t{1} << (page % 64);
  SM_ASSERT((words_[page / 64] & bit) == 0);
  words_[page / 64] |= bit;
  ++allocated_;
  dirty_[page / kPagesPerRange] = true;
}

void AllocMap::Clear(uint64_t page) {
  SM_ASSERT(page < page_count_);
  uint64_t bit = uint64_t{1} << (page % 64);
  SM_ASSERT((words_[page / 64] & bit) != 0);
  SM_DASSERT(!IsMetadataPage(page));
  words_[page / 64] &= ~bit;
  --allocated_;
  hint_word_ = std::min<size_t>(hint_word_, page / 64);
  dirty_[page / kPagesPerRange] = true;
}

std::vector<uint64_t> AllocMap::TakeDirty() {
  std::vector<uint64_t> ranges;
  for (uint64_t range = 0; range < dirty_.size(); ++range) {
    if (dirty_[range]) ranges.push_back(range);
    dirty_[range] = false;
  }
  return ranges;
}

void AllocMap::Serialize(uint64_t range, int slot, uint64_t creation_id, uint64_t sequence,
                         void* page) const {
  SM_ASSERT(range < range_count());
  InitPage(page, PageId(MapSlotPage(range, slot)), PageType::kAllocMap);
  MapBodyHeader body{creation_id, range * kPagesPerRange, sequence};
  auto* bytes = static_cast<char*>(page);
  std::memcpy(bytes + kPageHeaderBytes, &body, sizeof(body));
  size_t first_word = range * kWordsPerRange;
  size_t words = std::min(kWordsPerRange, words_.size() - first_word);
  std::memcpy(bytes + kBitsOffset, &words_[first_word], words * sizeof(uint64_t));
}

Status AllocMap::Validate(const void* page, uint64_t range, int slot, uint64_t creation_id,
                          uint64_t* sequence) {
  SM_TRY(VerifyPage(page, PageId(MapSlotPage(range, slot))));
  if (PageTypeOf(page) != PageType::kAllocMap) {
    return Status::Corruption(RangeName(range, slot) + "has page type " +
                              PageTypeName(PageTypeOf(page)));
  }
  MapBodyHeader body;
  std::memcpy(&body, static_cast<const char*>(page) + kPageHeaderBytes, sizeof(body));
  if (body.creation_id != creation_id) {
    return Status::Corruption(RangeName(range, slot) + "belongs to another volume");
  }
  if (body.first_page != range * kPagesPerRange) {
    return Status::Corruption(RangeName(range, slot) + "describes pages " +
                              std::to_string(body.first_page) + "..");
  }
  *sequence = body.sequence;
  return Status::OK();
}

void AllocMap::Load(uint64_t range, const void* page) {
  SM_ASSERT(range < range_count());
  size_t first_word = range * kWordsPerRange;
  size_t words = std::min(kWordsPerRange, words_.size() - first_word);
  for (size_t w = first_word; w < first_word + words; ++w) allocated_ -= std::popcount(words_[w]);
  std::memcpy(&words_[first_word], static_cast<const char*>(page) + kBitsOffset,
              words * sizeof(uint64_t));
  if (page_count_ % 64 != 0 && first_word + words == words_.size()) {
    words_.back() &= (uint64_t{1} << (page_count_ % 64)) - 1;  // pages past the end
  }
  for (size_t w = first_word; w < first_word + words; ++w) allocated_ += std::popcount(words_[w]);
  ForEachMetadataPage(range, [this](uint64_t p) {
    if (!IsAllocated(p)) Set(p);
  });
  hint_word_ = 0;  // a loaded range may free anything; the next search starts over
  dirty_[range] = false;
}

bool AllocMap::CheckInvariants() const {
  if (page_count_ == 0) return words_.empty() && allocated_ == 0;
  if (page_count_ != RoundUpForMapSlots(page_count_)) return false;                  // inv. 4
  if (words_.size() != (page_count_ + 63) / 64 || dirty_.size() != range_count()) return false;
  uint64_t count = 0;
  for (uint64_t word : words_) count += std::popcount(word);
  if (count != allocated_) return false;                                                // inv. 2
  if (page_count_ % 64 != 0 && (words_.back() >> (page_count_ % 64)) != 0) return false;  // 1
  for (uint64_t range = 0; range < range_count(); ++range) {
    bool ok = true;
    ForEachMetadataPage(range, [&](uint64_t p) { ok = ok && IsAllocated(p); });
    if (!ok) return false;                                                              // inv. 1
  }
  for (size_t w = 0; w < std::min(hint_word_, words_.size()); ++w) {
    if (words_[w] != ~uint64_t{0}) return false;                                        // inv. 3
  }
  return true;
}

}  // namespace sm::space
