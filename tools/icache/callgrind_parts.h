// Running a binary under callgrind's cache and branch simulators and reading back the parts it
// dumped (CALLGRIND_DUMP_STATS_AT), for the instruction-cache harnesses in tools/icache/.
//
// A measured program brackets each region with the client requests of valgrind/callgrind.h:
// collection is off at start (--collect-atstart=no), CALLGRIND_TOGGLE_COLLECT turns it on at the
// region's start, and CALLGRIND_DUMP_STATS_AT(label) then CALLGRIND_TOGGLE_COLLECT end it, so
// that each dumped part holds exactly one region's events. Instrumentation stays on throughout,
// so the simulated caches see every instruction between regions too (warm, as on hardware).
//
// The counts are exact and deterministic for a given binary, input and cache geometry; that is
// why they, not wall time, are the figures checked.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sm::icache {

// A cache geometry as valgrind takes it: "size,associativity,line" in bytes.
struct Geometry {
  std::string i1 = "32768,8,64";
  std::string d1 = "49152,12,64";
  std::string ll = "2097152,16,64";
  std::string Name() const;  // "32 KiB 8-way" (of the L1-I)
  std::string Suffix() const;  // "" for the default I1, else e.g. "_16k4w"
  // Whether i1 reads as valgrind's SIZE,WAYS,LINE (positive byte counts); valgrind itself
  // refuses the ones it cannot simulate (sets not a power of two) when a run starts.
  bool Valid() const;
};

// The events of one dumped part (callgrind's names: Ir, I1mr, D1mr, D1mw, Bcm, Bim, ...).
struct Counters {
  std::map<std::string, uint64_t> events;
  uint64_t Get(const std::string& name) const;
  uint64_t Instructions() const { return Get("Ir"); }
  uint64_t L1iMisses() const { return Get("I1mr"); }
  uint64_t L1dMisses() const { return Get("D1mr") + Get("D1mw"); }
  uint64_t Mispredicts() const { return Get("Bcm") + Get("Bim"); }
  uint64_t CondMispredicts() const { return Get("Bcm"); }
};

// Where a run spent its instructions, by function: each function's own instructions (Ir, its
// callees' not included), how often each function called each other one, and every event of
// the calls into each function (its inclusive cost, callees included, summed over its callers;
// a function that recurses counts its nested calls twice). Names as callgrind wrote them
// (mangled with --demangle=no).
struct FunctionProfile {
  std::map<std::string, uint64_t> self_ir;
  std::map<std::pair<std::string, std::string>, uint64_t> calls;  // (caller, callee) -> calls
  std::map<std::string, Counters> called;
  void Add(const FunctionProfile& other) {  // sums another run's
    for (const auto& [name, ir] : other.self_ir) self_ir[name] += ir;
    for (const auto& [arc, count] : other.calls) calls[arc] += count;
    for (const auto& [name, c] : other.called) {
      for (const auto& [event, n] : c.events) called[name].events[event] += n;
    }
  }
};

// One dumped part read back: its trigger label, its summary counters and, when it was dumped
// with --dump-instr=yes and read with a line size, the instruction-cache lines it executed
// (address / line size, each with nonzero Ir; sorted, distinct): its code footprint.
struct Part {
  std::string label;
  Counters counters;
  std::vector<uint64_t> lines;
  FunctionProfile functions;  // read only when asked for
};

// Adds one callgrind output file's function costs, call counts and inclusive costs of calls to
// *profile. Reads the name
// compression ("fn=(12) name" once, then "fn=(12)") and drops callgrind's context suffixes
// ("'2"). False if the file cannot be read.
bool AddCallgrindFunctions(const std::string& path, FunctionProfile* profile);

// Runs `command` (a program and its arguments, already quoted for the shell) under callgrind
// with `geometry`, its output in `out_prefix`.* (removed afterwards unless keep), and returns
// the dumped parts by label. False (with *error) if valgrind is missing or the run failed.
bool RunUnderCallgrind(const std::string& command, const Geometry& geometry,
                       const std::string& out_prefix, bool keep,
                       std::map<std::string, Counters>* parts, std::string* error);

// The same with more valgrind options (`extra_args`, e.g. "--dump-instr=yes"), returning every
// dumped part in dump order, each with its footprint in lines of `line_bytes` (0: none read)
// and, if `functions`, its FunctionProfile.
bool RunUnderCallgrindParts(const std::string& command, const Geometry& geometry,
                            const std::string& out_prefix, const std::string& extra_args,
                            uint32_t line_bytes, bool functions, bool keep,
                            std::vector<Part>* parts, std::string* error);

// Parses one callgrind output file: its trigger label, its summary counters and (line_bytes
// > 0) its footprint. Cost lines carry an instruction address first, absolute ("0x4a1f0") or
// relative to the previous cost line's ("+3", "-12", "*" for the same); the line after a
// "calls=" line is the call's inclusive cost, not the call site's own, and neither it nor the
// "calls=" line's target moves the position the next cost line is relative to (checked
// against --compress-pos=no output).
bool ParseCallgrindFile(const std::string& path, uint32_t line_bytes, Part* part);

// Replaces the directory `to` with a copy of `from` (a database, so that every measured run
// starts from the same state); false, with a message on stderr, on failure.
bool FreshCopy(const std::string& from, const std::string& to);

// A binary's defined functions, from its symbol table (nm -S).
struct FunctionSymbols {
  std::map<std::string, uint64_t> sizes;  // by (mangled) name, in bytes
  // The other names of the same code (a constructor's complete-object name, C1, is an alias
  // of its base-object one, C2, whose section bears that name): name -> its aliases.
  std::map<std::string, std::vector<std::string>> aliases;
};

// Reads `binary`'s functions. False (with *error) if nm fails or finds none.
bool ReadFunctionSymbols(const std::string& binary, FunctionSymbols* symbols, std::string* error);

// `s` as one shell word: single-quoted, its own single quotes escaped.
std::string ShellQuote(const std::string& s);

double ReductionPct(double baseline, double measured);  // 100 * (1 - measured / baseline)

// The line size of a valgrind geometry "size,associativity,line" (64 if it does not parse).
uint32_t LineBytes(const std::string& geometry);

}  // namespace sm::icache
