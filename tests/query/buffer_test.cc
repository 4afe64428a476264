// The buffer operator: it fills to N tuples or the child's end, then serves them without
// calling the child; end of input, reopening, an empty child, N = 1; the tuples it hands out
// stay valid for the window its parent asked for; results are those of the plan without it.
#include "query/query.h"
#include "tests/query/query_test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

// An instantiated plan, opened in its own read-committed transaction.
struct OpenTree {
  std::unique_ptr<Operator> root;
  std::unique_ptr<Transaction> txn;
  ExecContext ctx;
  OpenTree(const Catalog& catalog, const Plan& plan) {
    REQUIRE(plan.status().ok());
    REQUIRE(plan.node()->Instantiate(&root).ok());
    REQUIRE(catalog.db()->Begin(&txn, Isolation::kReadCommitted).ok());
    ctx.db = catalog.db();
    ctx.txn = txn.get();
    REQUIRE(root->Open(&ctx).ok());
  }
  ~OpenTree() {
    root->Close();
    txn->Commit().PermitUnchecked();
  }
  const Value* Next() {
    const Value* row = nullptr;
    REQUIRE(root->Next(&row).ok());
    return row;
  }
  const Operator& child() const { return *root->children()[0]; }
};

TEST_CASE("a buffer fills to its size, then serves without calling its child", "[unit][query]") {
  PlanFixture f(250);
  const ResultRows plain = Run(f.catalog, f.Scan());
  for (uint32_t n : {1u, 7u, 100u, 250u, 1000u}) {
    INFO("buffer of " << n);
    OpenTree tree(f.catalog, f.Scan().Buffer(n));
    const size_t total = f.rows.size();
    size_t served = 0;
    while (const Value* row = tree.Next()) {
      // Each fill pulls up to n tuples; between fills the child is not called.
      const size_t fills = served / n + 1;
      CHECK(tree.child().stats().rows == std::min(total, fills * n));
      REQUIRE(served < plain.rows.size());
      CHECK(FormatValue(row[0], tree.root->schema()[0].type) == plain.rows[served][0]);
      ++served;
    }
    CHECK(served == total);
    CHECK(tree.Next() == nullptr);  // the end again, without a further fill
    CHECK(tree.child().stats().rows == total);
  }
}

TEST_CASE("NextBatch returns the tuples Next would, in batches, and none at the end",
          "[unit][query]") {
  PlanFixture f(300);
  const Plan plans[] = {f.Scan(), f.Scan().Filter(Col("a") % 3 == 0),
                        f.Scan().Project({{Col("a") * 2, "twice"}})};
  for (const Plan& plan : plans) {
    const ResultRows plain = Run(f.catalog, plan);
    for (uint32_t max : {1u, 3u, 64u, 1000u}) {
      INFO(plan.node()->name() << ", batches of up to " << max);
      std::unique_ptr<Operator> root;
      REQUIRE(plan.node()->Instantiate(&root).ok());
      root->RequestWindow(max);
      std::unique_ptr<Transaction> txn;
      REQUIRE(f.catalog.db()->Begin(&txn, Isolation::kReadCommitted).ok());
      ExecContext ctx;
      ctx.db = f.catalog.db();
      ctx.txn = txn.get();
      REQUIRE(root->Open(&ctx).ok());
      std::vector<const Value*> batch(max);
      size_t served = 0;
      for (;;) {
        uint32_t got = 0;
        REQUIRE(root->NextBatch(batch.data(), max, &got).ok());
        REQUIRE(got <= max);
        if (got == 0) break;
        // The whole batch is still valid: the window covers it.
        for (uint32_t i = 0; i < got; ++i) {
          REQUIRE(served + i < plain.rows.size());
          CHECK(FormatValue(batch[i][0], root->schema()[0].type) == plain.rows[served + i][0]);
        }
        served += got;
      }
      CHECK(served == plain.rows.size());
      CHECK(root->stats().rows == served);
      uint32_t again = 1;
      REQUIRE(root->NextBatch(batch.data(), max, &again).ok());
      CHECK(again == 0);
      root->Close();
      REQUIRE(txn->Commit().ok());
    }
  }
}

TEST_CASE("a buffer over an empty input returns nothing, and reopened it runs again",
          "[unit][query]") {
  PlanFixture f(40);
  {
    OpenTree tree(f.catalog, f.Scan().Filter(Col("a") > 1000000).Buffer(8));
    CHECK(tree.Next() == nullptr);
    CHECK(tree.Next() == nullptr);
  }
  OpenTree tree(f.catalog, f.Scan().Buffer(16));
  size_t first = 0;
  while (tree.Next() != nullptr) ++first;
  tree.root->Close();
  REQUIRE(tree.root->Open(&tree.ctx).ok());
  size_t second = 0;
  while (tree.Next() != nullptr) ++second;
  CHECK(first == f.rows.size());
  CHECK(second == first);
}

TEST_CASE("a buffer's tuples stay valid for the window its parent asked for", "[unit][query]") {
  PlanFixture f(300);
  std::vector<std::pair<const char*, Plan>> inputs = {
      {"scan", f.Scan()},
      {"filtered scan", f.Scan().Filter(Col("a") > 3)},
      {"filter", f.Scan().Project({{Col("tail")}, {Col("a")}}).Filter(Col("a") < 20)},
      {"project", f.Scan().Project({{Substr(Col("tail"), 2, 5), "s"}, {Col("name")}})},
      {"hash join", f.Scan().HashJoin(Plan::Scan(f.catalog, "u", {"id", "tail"}, {}, "x"),
                                      {{Col("a"), Col("x.id")}})},
      {"sort", f.Scan().Sort({"tail"})},
  };
  for (auto& [name, input] : inputs) {
    for (uint32_t n : {1u, 5u, 64u, 1000u}) {
      for (uint32_t window : {1u, 3u, 100u}) {
        INFO(name << ", buffer of " << n << ", window " << window);
        CHECK(CheckWindow(f.catalog, input.Buffer(n), window) > 0);
        // A buffer over a buffer: the inner one is asked for the outer's size and window.
        CHECK(CheckWindow(f.catalog, input.Buffer(n).Buffer(7), window) > 0);
      }
    }
  }
}

TEST_CASE("buffers anywhere in a plan leave its result unchanged", "[unit][query]") {
  PlanFixture f(300);
  auto plan = [&](bool buffered) {
    auto b = [buffered](const Plan& p) { return buffered ? p.Buffer(10) : p; };
    Plan probe = b(f.Scan().Filter(Col("a") > 2));
    Plan build = b(Plan::Scan(f.catalog, "u", {"id", "name"}, {}, "x"));
    Plan joined = b(probe.HashJoin(build, {{Col("a"), Col("x.id")}}));
    return b(joined.Project({{Col("name")}, {Col("x.name")}, {Col("a")}}))
        .Aggregate({{Col("name")}}, {Count().As("n"), Sum(Col("a")).As("s")})
        .Sort({"name"});
  };
  ResultRows plain = Run(f.catalog, plan(false));
  ResultRows buffered = Run(f.catalog, plan(true));
  REQUIRE(!plain.rows.empty());
  CHECK(buffered.rows == plain.rows);
  CHECK(plan(true).Explain().find("Buffer 10 tuples") != std::string::npos);
}

// The operator names of a tree in preorder, indented by depth.
std::string Shape(const Operator& op, int depth = 0) {
  std::string out = std::string(static_cast<size_t>(depth) * 2, ' ') + op.name() + "\n";
  for (const auto& c : op.children()) out += Shape(*c, depth + 1);
  return out;
}

TEST_CASE("buffers on: above every operator but the root and blocking ones", "[unit][query]") {
  PlanFixture f(100);
  Plan q =
      f.Scan()
          .Filter(Col("a") > 2)
          .HashJoin(Plan::Scan(f.catalog, "u", {"id", "name"}, {}, "x"), {{Col("a"), Col("x.id")}})
          .Project({{Col("name")}, {Col("a")}})
          .Aggregate({{Col("name")}}, {Count().As("n")})
          .Sort({"name"})
          .Limit(3);
  std::unique_ptr<Operator> root;
  REQUIRE(q.node()->Instantiate(&root).ok());
  BufferOptions on{BufferMode::kOn, 50};
  REQUIRE(PlaceBuffers(on, root.get()).ok());
  CHECK(Shape(*root) ==
        "Limit\n"
        "  Sort\n"             // blocking: no buffer above it
        "    HashAggregate\n"  // blocking
        "      Buffer\n"
        "        Project\n"
        "          Buffer\n"
        "            HashJoin\n"
        "              Buffer\n"
        "                TableScan\n"
        "              Buffer\n"
        "                TableScan\n");
  // Off: the tree as built; the explained tree shows the buffers a cursor would run.
  std::unique_ptr<Operator> plain;
  REQUIRE(q.node()->Instantiate(&plain).ok());
  REQUIRE(PlaceBuffers(BufferOptions{}, plain.get()).ok());
  CHECK(Shape(*plain).find("Buffer") == std::string::npos);
  QueryOptions options;
  options.buffers = on;
  std::string text;
  REQUIRE(ExplainOperatorTree(q, options, &text).ok());
  CHECK(text.find("Buffer 50 tuples") != std::string::npos);
  CHECK(Run(f.catalog, q, options).rows == Run(f.catalog, q).rows);
  // A size out of range is refused when the cursor opens.
  options.buffers.tuples = 0;
  std::unique_ptr<ResultCursor> cursor;
  CHECK(ResultCursor::Open(f.catalog, q, options, &cursor).IsInvalidArgument());
}

TEST_CASE("a buffer of no tuples, or of too many, is refused", "[unit][query]") {
  PlanFixture f(10);
  CHECK(f.Scan().Buffer(0).status().IsInvalidArgument());
  CHECK(f.Scan().Buffer(kMaxBufferTuples + 1).status().IsInvalidArgument());
  CHECK(f.Scan().Buffer(kMaxBufferTuples).status().ok());
}

}  // namespace
}  // namespace sm::test
