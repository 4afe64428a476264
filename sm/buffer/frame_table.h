// FrameTable: one partition of the buffer pool's page table (page id -> frame), by open
// addressing with linear probing. It replaces std::unordered_map, whose lookup - once per page
// fix - divides by a prime bucket count and follows a node pointer.
//
// Owns: a power-of-two array of slots. Page id 0 (PageId::Invalid, never a data page) marks an
// empty slot.
//
// Invariants:
//   1. An entry lies in the probe run that starts at its home slot (Home), with no empty slot
//      between the home slot and the entry; so Find may stop at the first empty slot.
//   2. At most half of the slots are full (Insert doubles the array first), so every probe
//      meets an empty slot.
// Erase keeps 1 without tombstones: it moves each later entry of the run whose home slot does
// not lie between the hole and the entry back into the hole (Knuth's algorithm R).
//
// Thread/fiber safety: none of its own; the partition's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sm::buffer {

struct Frame;

class FrameTable {
 public:
  FrameTable() : slots_(size_t{1} << kInitialBits) {}

  // The frame mapped to page `id` (non-zero), or null.
  Frame* Find(uint64_t id) const {
    for (size_t i = Home(id);; i = Next(i)) {
      const Slot& slot = slots_[i];
      if (slot.id == id) return slot.frame;
      if (slot.id == 0) return nullptr;
    }
  }

  // Maps `id` (non-zero, not mapped) to `frame`.
  void Insert(uint64_t id, Frame* frame) {
    if (2 * (count_ + 1) > slots_.size()) Grow();
    Place(id, frame);
    ++count_;
  }

  // Unmaps `id`; false if it was not mapped.
  bool Erase(uint64_t id) {
    size_t hole = Home(id);
    for (; slots_[hole].id != id; hole = Next(hole)) {
      if (slots_[hole].id == 0) return false;
    }
    for (size_t j = Next(hole); slots_[j].id != 0; j = Next(j)) {
      if (Distance(Home(slots_[j].id), j) >= Distance(hole, j)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
    return true;
  }

  size_t size() const { return count_; }

  // Calls fn(id, frame) for every entry (CheckInvariants).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.id != 0) fn(slot.id, slot.frame);
    }
  }

 private:
  static constexpr int kInitialBits = 3;
  // Not BufferPool::PartitionOf's multiplier: the ids of one partition share its hash bits.
  static constexpr uint64_t kMultiplier = 0xC2B2AE3D27D4EB4Full;

  struct Slot {
    uint64_t id = 0;
    Frame* frame = nullptr;
  };

  size_t Home(uint64_t id) const { return (id * kMultiplier) >> (64 - bits_); }
  size_t Next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  size_t Distance(size_t from, size_t to) const { return (to - from) & (slots_.size() - 1); }

  void Place(uint64_t id, Frame* frame) {
    size_t i = Home(id);
    while (slots_[i].id != 0) i = Next(i);
    slots_[i] = Slot{id, frame};
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    ++bits_;
    for (const Slot& slot : old) {
      if (slot.id != 0) Place(slot.id, slot.frame);
    }
  }

  std::vector<Slot> slots_;
  int bits_ = kInitialBits;
  size_t count_ = 0;
};

}  // namespace sm::buffer
