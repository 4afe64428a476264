// FrameTable: one partition of the buffer pool's page table (page id -> frame), by open
// addressing with linear probing. It replaces std::unordered_map, whose lookup - once per page
// fix - divides by a prime bucket count and follows a node pointer.
//
// Owns: a power-of-two array of slots (and the smaller arrays it outgrew). Page id 0
// (PageId::Invalid, never a data page) marks an empty slot.
//
// Invariants:
//   1. An entry lies in the probe run that starts at its home slot (Home), with no empty slot
//      between the home slot and the entry; so Find may stop at the first empty slot.
//   2. At most half of the slots are full (Insert doubles the array first), so every probe
//      meets an empty slot.
//   3. An array, once published, stays allocated until the table dies: a reader without the
//      lock (FindUnlocked) may still be probing one the table has outgrown.
// Erase keeps 1 without tombstones: it moves each later entry of the run whose home slot does
// not lie between the hole and the entry back into the hole (Knuth's algorithm R).
//
// Thread/fiber safety: Find, Insert, Erase, size and ForEach under the partition's lock.
// FindUnlocked may run concurrently with all of them: the slots are atomics (relaxed: plain
// loads and stores on x86), so it never reads torn words, but it may miss an entry being moved
// or return a frame that no longer holds the page; its caller validates (BufferPool::FixImpl).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace sm::buffer {

struct Frame;

class FrameTable {
 public:
  FrameTable() { Publish(std::make_unique<Array>(kInitialBits)); }

  // The frame mapped to page `id` (non-zero), or null.
  Frame* Find(uint64_t id) const {
    const Array& a = *arrays_.back();
    for (size_t i = Home(id, a.bits);; i = Next(i, a)) {
      const Slot& slot = a.slots[i];
      uint64_t slot_id = slot.id.load(std::memory_order_relaxed);
      if (slot_id == id) return slot.frame.load(std::memory_order_relaxed);
      if (slot_id == 0) return nullptr;
    }
  }

  // Find without the lock: the frame that was mapped to `id` at some moment of the probe, a
  // frame that held another page (a slot read mid-move), or null (also when the entry was
  // being moved). Any result must be validated against the frame itself.
  Frame* FindUnlocked(uint64_t id) const {
    // One load gives both the slots and their count (see current_), so a lookup waits for
    // this line, the slot's and nothing in between.
    uintptr_t current = current_.load(std::memory_order_acquire);
    const Slot* slots = reinterpret_cast<const Slot*>(current & ~kBitsMask);
    const int bits = static_cast<int>(current & kBitsMask);
    const size_t mask = (size_t{1} << bits) - 1;
    size_t i = Home(id, bits);
    for (size_t probes = 0; probes <= mask; ++probes, i = (i + 1) & mask) {
      const Slot& slot = slots[i];
      uint64_t slot_id = slot.id.load(std::memory_order_relaxed);
      if (slot_id == id) return slot.frame.load(std::memory_order_relaxed);
      if (slot_id == 0) return nullptr;
    }
    return nullptr;  // only while slots move under it; the caller takes the lock then
  }

  // Maps `id` (non-zero, not mapped) to `frame`.
  void Insert(uint64_t id, Frame* frame) {
    if (2 * (count_ + 1) > arrays_.back()->mask + 1) Grow();
    Place(*arrays_.back(), id, frame);
    ++count_;
  }

  // Unmaps `id`; false if it was not mapped.
  bool Erase(uint64_t id) {
    Array& a = *arrays_.back();
    size_t hole = Home(id, a.bits);
    for (; IdAt(a, hole) != id; hole = Next(hole, a)) {
      if (IdAt(a, hole) == 0) return false;
    }
    for (size_t j = Next(hole, a); IdAt(a, j) != 0; j = Next(j, a)) {
      if (Distance(Home(IdAt(a, j), a.bits), j, a) >= Distance(hole, j, a)) {
        Set(a, hole, IdAt(a, j), a.slots[j].frame.load(std::memory_order_relaxed));
        hole = j;
      }
    }
    Set(a, hole, 0, nullptr);
    --count_;
    return true;
  }

  size_t size() const { return count_; }

  // Calls fn(id, frame) for every entry (CheckInvariants).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    const Array& a = *arrays_.back();
    for (size_t i = 0; i <= a.mask; ++i) {
      uint64_t id = IdAt(a, i);
      if (id != 0) fn(id, a.slots[i].frame.load(std::memory_order_relaxed));
    }
  }

 private:
  static constexpr int kInitialBits = 3;
  // Not BufferPool::PartitionOf's multiplier: the ids of one partition share its hash bits.
  static constexpr uint64_t kMultiplier = 0xC2B2AE3D27D4EB4Full;

  // Slots come in arrays aligned to kSlotsAlignment, whose low bits carry the array's size
  // (bits) in current_.
  static constexpr size_t kSlotsAlignment = 64;
  static constexpr uintptr_t kBitsMask = kSlotsAlignment - 1;

  struct alignas(16) Slot {
    std::atomic<uint64_t> id{0};
    std::atomic<Frame*> frame{nullptr};
  };
  struct SlotsDeleter {
    size_t count = 0;
    void operator()(Slot* slots) const {
      for (size_t i = 0; i < count; ++i) slots[i].~Slot();
      ::operator delete[](slots, std::align_val_t{kSlotsAlignment});
    }
  };
  static Slot* NewSlots(size_t count) {
    auto* slots = static_cast<Slot*>(
        ::operator new[](count * sizeof(Slot), std::align_val_t{kSlotsAlignment}));
    for (size_t i = 0; i < count; ++i) new (&slots[i]) Slot();
    return slots;
  }
  struct Array {
    explicit Array(int b)
        : bits(b), mask((size_t{1} << b) - 1), slots(NewSlots(mask + 1), SlotsDeleter{mask + 1}) {}
    const int bits;
    const size_t mask;
    const std::unique_ptr<Slot[], SlotsDeleter> slots;
  };

  static size_t Home(uint64_t id, int bits) { return (id * kMultiplier) >> (64 - bits); }
  static size_t Next(size_t i, const Array& a) { return (i + 1) & a.mask; }
  static size_t Distance(size_t from, size_t to, const Array& a) { return (to - from) & a.mask; }
  static uint64_t IdAt(const Array& a, size_t i) {
    return a.slots[i].id.load(std::memory_order_relaxed);
  }
  // The frame first: a reader that sees the new id sees a frame that is at worst stale.
  static void Set(Array& a, size_t i, uint64_t id, Frame* frame) {
    a.slots[i].frame.store(frame, std::memory_order_relaxed);
    a.slots[i].id.store(id, std::memory_order_relaxed);
  }

  static void Place(Array& a, uint64_t id, Frame* frame) {
    size_t i = Home(id, a.bits);
    while (IdAt(a, i) != 0) i = Next(i, a);
    Set(a, i, id, frame);
  }

  void Publish(std::unique_ptr<Array> array) {
    static_assert(sizeof(uintptr_t) * 8 - 1 <= kBitsMask, "every array size fits the low bits");
    arrays_.push_back(std::move(array));
    const Array& a = *arrays_.back();
    // release: a reader that loads the new array sees its slots filled.
    current_.store(reinterpret_cast<uintptr_t>(a.slots.get()) | static_cast<uintptr_t>(a.bits),
                   std::memory_order_release);
  }

  void Grow() {
    const Array& old = *arrays_.back();
    auto grown = std::make_unique<Array>(old.bits + 1);
    for (size_t i = 0; i <= old.mask; ++i) {
      uint64_t id = IdAt(old, i);
      if (id != 0) Place(*grown, id, old.slots[i].frame.load(std::memory_order_relaxed));
    }
    Publish(std::move(grown));
  }

  std::vector<std::unique_ptr<Array>> arrays_;  // every array published; the last is current
  // arrays_.back() for FindUnlocked: its slots' address with its bits in the low bits.
  std::atomic<uintptr_t> current_{0};
  size_t count_ = 0;
};

}  // namespace sm::buffer
