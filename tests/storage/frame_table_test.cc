// FrameTable (the buffer pool's page-table partition): seeded random inserts, erases and
// lookups against a std::unordered_map model, over few enough ids that probe runs collide,
// grow and wrap around the end of the array.
#include "sm/buffer/frame_table.h"

#include <catch2/catch.hpp>
#include <memory>
#include <random>
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
