// The code-layout tool's parts: reading functions from a callgrind file, call-chain clustering,
// and the layout file it writes.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/io/io_test_util.h"
#include "tools/icache/callgrind_parts.h"
#include "tools/icache/function_order.h"

namespace sm::icache {
namespace {

// A callgrind file as valgrind writes one with --dump-instr=yes and name compression: costs
// are "<instr> <line> <Ir> ...", a call's inclusive cost follows its "calls=" line.
constexpr const char* kDump =
    "version: 1\n"
    "creator: callgrind-3.19.0\n"
    "positions: instr line\n"
    "events: Ir I1mr\n"
    "fl=(1) a.cc\n"
    "fn=(1) main\n"
    "0x1000 1 5 1\n"
    "cfn=(2) _Z4leafv\n"
    "calls=3 0x2000 9\n"
    "+4 2 30 2\n"
    "+4 3 2 0\n"
    "cfn=(3) _Z3midv'2\n"
    "calls=1 0x3000 7\n"
    "* 3 50 1\n"
    "fn=(2)\n"
    "0x2000 9 30 0\n"
    "fn=(3)\n"
    "0x3000 7 40 1\n"
    "cfn=(2)\n"
    "calls=2 0x2000 9\n"
    "+8 8 20 0\n"
    "totals: 77 2\n";

TEST_CASE("the functions of a callgrind dump: own instructions, calls, inclusive costs", "[unit]") {
  test::ScratchDir dir;
  const std::string path = dir.path() + "/callgrind.out.1";
  std::ofstream(path) << kDump;
  FunctionProfile profile;
  REQUIRE(AddCallgrindFunctions(path, &profile));
  // main: 5 + 2 of its own (the calls' 30 and 50 are its callees'); _Z3midv'2 is _Z3midv.
  CHECK(profile.self_ir.at("main") == 7);
  CHECK(profile.self_ir.at("_Z4leafv") == 30);
  CHECK(profile.self_ir.at("_Z3midv") == 40);
  CHECK(profile.self_ir.count("_Z3midv'2") == 0);
  CHECK(profile.calls.at({"main", "_Z4leafv"}) == 3);
  CHECK(profile.calls.at({"main", "_Z3midv"}) == 1);
  CHECK(profile.calls.at({"_Z3midv", "_Z4leafv"}) == 2);
  // The calls into a function, every event: _Z4leafv from main (30, 2) and from _Z3midv (20, 0).
  CHECK(profile.called.at("_Z4leafv").Instructions() == 50);
  CHECK(profile.called.at("_Z4leafv").L1iMisses() == 2);
  CHECK(profile.called.at("_Z3midv").Instructions() == 50);
  CHECK(profile.called.at("_Z3midv").L1iMisses() == 1);
  CHECK(profile.called.count("main") == 0);
  // A second file adds to the first.
  REQUIRE(AddCallgrindFunctions(path, &profile));
  CHECK(profile.self_ir.at("main") == 14);
  CHECK(profile.calls.at({"main", "_Z4leafv"}) == 6);
  CHECK(profile.called.at("_Z4leafv").Instructions() == 100);
  CHECK_FALSE(AddCallgrindFunctions(dir.path() + "/missing", &profile));
}

TEST_CASE("a dump whose first event is not Ir is refused", "[unit]") {
  test::ScratchDir dir;
  const std::string path = dir.path() + "/callgrind.out.1";
  std::ofstream(path) << "positions: line\nevents: I1mr Ir\nfn=(1) f\n1 2 3\n";
  FunctionProfile profile;
  CHECK_FALSE(AddCallgrindFunctions(path, &profile));
}

// A profile: `hot` calls `callee_a` (often) and `callee_b`; `callee_b` is called more often by
// `other`; `lonely` calls nothing and nothing calls it; `libc_fn` has no size (not in the binary).
FunctionProfile SampleProfile() {
  FunctionProfile p;
  p.self_ir = {{"hot", 1000},   {"callee_a", 500}, {"callee_b", 300}, {"other", 100},
               {"lonely", 900}, {"libc_fn", 5000}, {"never", 0}};
  p.calls = {{{"hot", "callee_a"}, 50},
             {{"hot", "callee_b"}, 10},
             {{"other", "callee_b"}, 20},
             {{"hot", "libc_fn"}, 99}};
  return p;
}

const std::map<std::string, uint64_t> kSizes = {{"hot", 400},      {"callee_a", 100},
                                                {"callee_b", 100}, {"other", 100},
                                                {"lonely", 100},   {"never", 50}};

TEST_CASE("call-chain clustering puts callees after their most frequent callers", "[unit]") {
  const std::vector<std::string> order = CallChainOrder(SampleProfile(), kSizes, 4096);
  // Clusters: {hot, callee_a} (1500 Ir / 500 B), {other, callee_b} (400 / 200), {lonely}
  // (900 / 100). Densest first: lonely 9, hot's 3, other's 2.
  const std::vector<std::string> want = {"lonely", "hot", "callee_a", "other", "callee_b"};
  CHECK(order == want);
}

TEST_CASE("call-chain clustering keeps clusters within the byte limit", "[unit]") {
  // 450 bytes: hot (400) takes no callee; other + callee_b (200) still merge.
  const std::vector<std::string> order = CallChainOrder(SampleProfile(), kSizes, 450);
  // Densities: lonely 9, callee_a 5, hot 2.5, {other, callee_b} 2.
  const std::vector<std::string> want = {"lonely", "callee_a", "hot", "other", "callee_b"};
  CHECK(order == want);
  CHECK(CallChainOrder(FunctionProfile{}, kSizes, 4096).empty());
}

TEST_CASE("the layout file: the header as comments, then one section per function", "[unit]") {
  const std::string text = LayoutFileText({"_Z1fv", "_ZN1AC1Ev"}, {{"_ZN1AC1Ev", {"_ZN1AC2Ev"}}},
                                          "first line\n\nthird line\n");
  CHECK(text ==
        "# first line\n#\n# third line\n.text.sm_hot_code_start\n.text._Z1fv\n"
        ".text._ZN1AC1Ev\n.text._ZN1AC2Ev\n");
}

TEST_CASE("function sizes and aliases come from the binary's symbol table", "[unit]") {
  FunctionSymbols symbols;
  std::string error;
  // This test binary is a binary like any other: it defines main, and Catch2's classes have
  // constructors whose complete- and base-object names (C1, C2) are one function.
  REQUIRE(ReadFunctionSymbols(std::filesystem::read_symlink("/proc/self/exe").string(), &symbols,
                              &error));
  REQUIRE(symbols.sizes.count("main") == 1);
  CHECK(symbols.sizes.at("main") > 0);
  CHECK(symbols.aliases.count("main") == 0);
  bool constructor_alias = false;
  for (const auto& [name, others] : symbols.aliases) {
    const size_t c1 = name.find("C1E");
    if (c1 == std::string::npos) continue;
    std::string c2 = name;
    c2[c1 + 1] = '2';
    for (const std::string& other : others) constructor_alias |= other == c2;
  }
  CHECK(constructor_alias);
  FunctionSymbols none;
  CHECK_FALSE(ReadFunctionSymbols("/nonexistent/binary", &none, &error));
  CHECK(error.find("/nonexistent/binary") != std::string::npos);
}

}  // namespace
}  // namespace sm::icache
