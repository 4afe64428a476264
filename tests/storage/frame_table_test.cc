// FrameTable (the buffer pool's page-table partition): seeded random inserts, erases and
// lookups against a std::unordered_map model, over few enough ids that probe runs collide,
// grow and wrap around the end of the array.
#include "sm/buffer/frame_table.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "sm/buffer/buffer_pool.h"
#include "tests/test_util.h"

using sm::buffer::Frame;
using sm::buffer::FrameTable;

TEST_CASE("the frame table agrees with a map model", "[random][buffer]") {
  const uint64_t seed = sm::test::TestSeed("frame table vs model");
  std::mt19937_64 rng(seed);
  std::unique_ptr<Frame[]> frames(new Frame[64]);
  for (uint64_t id_range : {16u, 300u, 5000u}) {
    FrameTable table;
    std::unordered_map<uint64_t, Frame*> model;
    for (int step = 0; step < 20000; ++step) {
      uint64_t id = 1 + rng() % id_range;
      switch (rng() % 3) {
        case 0:
          if (model.count(id) == 0) {
            Frame* frame = &frames[rng() % 64];
            table.Insert(id, frame);
            model[id] = frame;
          }
          break;
        case 1:
          REQUIRE(table.Erase(id) == (model.erase(id) == 1));
          break;
        default: {
          auto it = model.find(id);
          REQUIRE(table.Find(id) == (it == model.end() ? nullptr : it->second));
        }
      }
      REQUIRE(table.size() == model.size());
    }
    size_t visited = 0;
    table.ForEach([&](uint64_t id, const Frame* frame) {
      ++visited;
      REQUIRE(model.at(id) == frame);
    });
    REQUIRE(visited == model.size());
    for (const auto& [id, frame] : model) REQUIRE(table.Find(id) == frame);
  }
}

TEST_CASE("unlocked lookups during inserts, erases and growth return mapped frames or null",
          "[random][buffer]") {
  // FindUnlocked runs without the partition lock (BufferPool::FixImpl): it may miss an entry
  // being moved or return a frame that no longer holds the id, but it must never read freed
  // memory (outgrown arrays stay allocated) or return anything but a frame or null. Ids
  // 1..kStable stay mapped throughout; the writer churns the others.
  const uint64_t seed = sm::test::TestSeed("frame table unlocked lookups");
  constexpr int kFrames = 64;
  constexpr uint64_t kStable = 32;
  std::unique_ptr<Frame[]> frames(new Frame[kFrames]);
  FrameTable table;
  std::mutex mu;  // the partition lock
  for (uint64_t id = 1; id <= kStable; ++id) table.Insert(id, &frames[id % kFrames]);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> stable_found{0}, bad{0};
  std::thread reader([&] {
    std::mt19937_64 rng(seed + 1);
    while (!stop.load(std::memory_order_relaxed)) {
      uint64_t id = 1 + rng() % 4000;
      Frame* f = table.FindUnlocked(id);
      if (f != nullptr && (f < &frames[0] || f >= &frames[kFrames])) bad.fetch_add(1);
      if (id <= kStable && f == &frames[id % kFrames]) stable_found.fetch_add(1);
    }
  });
  std::mt19937_64 rng(seed);
  std::unordered_map<uint64_t, Frame*> churn;
  for (int step = 0; step < 200000; ++step) {
    uint64_t id = kStable + 1 + rng() % 3000;
    std::lock_guard<std::mutex> guard(mu);
    if (churn.count(id) == 0) {
      table.Insert(id, &frames[rng() % kFrames]);
      churn[id] = nullptr;
    } else {
      REQUIRE(table.Erase(id));
      churn.erase(id);
    }
  }
  stop.store(true);
  reader.join();
  REQUIRE(bad.load() == 0);
  REQUIRE(stable_found.load() > 0);
  for (uint64_t id = 1; id <= kStable; ++id) REQUIRE(table.Find(id) == &frames[id % kFrames]);
}
