// Running the tpcc driver binary from a benchmark: one command, its stderr passed through for
// people, the last line of its stdout (`--output json`) parsed as the run's figures.
#pragma once

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace sm::bench {

// `s` as one shell word: single-quoted, its own single quotes escaped.
inline std::string ShellWord(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `tpcc args --output json`; the JSON of the last line of its stdout, or null (with a
// message naming `who`) if the command failed or printed no JSON.
inline nlohmann::json RunTpccJson(const std::string& who, const std::string& tpcc,
                                  const std::string& args) {
  const std::string cmd = ShellWord(tpcc) + " " + args + " --output json";
  std::fprintf(stderr, "[%s] tpcc %s\n", who.c_str(), args.c_str());
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return nullptr;
  std::string out, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  if (rc != 0 || last.empty()) {
    std::fprintf(stderr, "[%s] failed (status %d): %s\n", who.c_str(), rc, last.c_str());
    return nullptr;
  }
  nlohmann::json j = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// The bytes of every regular file under `dir` (0 if it cannot be read).
inline uint64_t DirectoryBytes(const std::string& dir) {
  std::error_code error;
  uint64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error)) bytes += it->file_size(error);
  }
  return bytes;
}

// "1,2" -> {"1", "2"}; empty parts are dropped.
inline std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace sm::bench
