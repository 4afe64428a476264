"""tools/run report's rendering, from the saved records in fixtures/ (no measuring; seconds).

    report_test.py REPORT_PY FIXTURE_DIR SCRATCH_DIR

Checks that `report.py --from` puts the fixtures' figures, commit, machine and commands into
the document; that it replaces the README's block between the markers and nothing else, and
again to the same text; that a README without the markers is left alone with a warning; and
that a failed tool is shown as failed and makes the report exit 1, and a tool measured on
another commit is marked so.
"""

import json
import os
import shutil
import subprocess
import sys

REPORT, FIXTURES, SCRATCH = sys.argv[1:4]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


def run(from_dir, readme, output):
    proc = subprocess.run([sys.executable, REPORT, "--from", from_dir, "--output", output,
                           "--readme", readme], capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines else {}
    return proc.returncode, summary, proc.stderr


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
output = os.path.join(SCRATCH, "results.md")
readme = os.path.join(SCRATCH, "README.md")
before = "# A storage manager\n\nProse before.\n\n<!-- headline:begin -->\n"
after = "<!-- headline:end -->\n\nProse after, untouched.\n"
with open(readme, "w", encoding="utf-8") as f:
    f.write(before + "an old table\n" + after)

# 1. The document.
status, summary, stderr = run(FIXTURES, readme, output)
check(status == 0, f"report.py --from exited {status}: {stderr}")
check(summary.get("readme") == "updated", f"README not updated: {summary}")
doc = read(output)
meta = load("meta.json")
check(meta["commit"] in doc, "the commit is missing")
check(meta["machine"]["cpu"] in doc, "the CPU model is missing")
check(meta["machine"]["compiler"] in doc, "the compiler is missing")
for name in sorted(os.listdir(FIXTURES)):
    if name == "meta.json" or not name.endswith(".json"):
        continue
    for command in load(name).get("commands", []):
        check(command in doc, f"{name}: the command `{command}` is missing")
expected = [
    "7.25 ns",             # switch: direct_switch_ns 7.2467
    "31.4 ns",             # lock: lock_release_ns 31.44
    "2,345 /s",            # log: durable_commits_per_s 2345.2
    "1,234,567",           # btree: lookups_per_s_1w
    "**54,321**",          # tpcc: the median of the 1-worker async runs 50,000 / 54,321 / 60,000
    "-78.4 %",             # icache: payment_l1i_reduction_pct 78.4
    "794 -> 171",          # icache: Payment's L1-I misses per transaction
    "-63.1 % (10 warehouses, 100 users)",  # the paper's mix, this build
    "-56 % at 10 warehouses",              # the paper's own figure, labelled
    "0.891x",              # steps-wall: mix_wall_speedup
    "btree.descend.inner",  # the placement's site
    "**passed**",          # crash-test
    "| the mix | 128,713 | 136,438 |",  # tpcc-core: instructions per transaction, this and base
    "(5.1 commits per sync",             # tpcc-core: commits_per_sync_1w_durable 5.14
    "**5.68x**",           # query: sqlite_ratio 5.6801
    "| Q1 | 987.6 | 4,321.0 | 4.38x |",  # query: Q1's row
    "| Q1 | 412 | 0.012 | 1.046 | 5.68 |",  # query: Q1's callgrind figures per row read
    "all 22 results equal SQLite's",
    "| Query 1: SUM, AVG, COUNT | off |",  # buffers: the paper's queries by variant
    "| Query 1: SUM, AVG, COUNT | -45.9 % |",  # buffers: q1_l1i_reduction_pct 45.91
    "1.338x",              # buffers: q3_nlj_wall_speedup
    "from never by the cycle estimate and from 3,000 rows by the wall clock",
    "total speedup 1.012x",  # buffers: ch_auto_total_speedup
    "| C, zipfian | 200,005 | 100,000 | sqlite | 2.00x |",  # ycsb: a cell's row
    "auto places buffers in Q5, Q9",  # buffers: ch_auto_buffered_queries
    "| Q5 | 0.988x |",       # buffers: ch_q5_auto_wall_speedup
    "| 72 | partition | 40.0 | 21.0 | 1.90x | 2.23x |",  # query-mt: a point's row
    "gained 1.97x from the second worker",  # query-mt: agg_tuple_cpu_speedup_2t
    "| 64M | 3,456.0 (model 3,628.8) |",  # radix-join: the plain hash join at 64M
    "**14.5 %**",          # radix-join: model_error_pct
]
for text in expected:
    check(text in doc, f"the document lacks '{text}'")
check("-dirty" not in doc, "a clean tree shown as dirty")

# 2. The README: the block between the markers replaced, the rest unchanged.
text = read(readme)
check(text.startswith(before) and text.endswith(after), "text outside the markers changed")
check("an old table" not in text, "the old block is still there")
check("54,321 tx/s" in text, "the headline lacks the TPC-C figure")
check("**128,713** (Stock-Level 573,336" in text, "the headline lacks the instructions figure")
check("12.3 s against SQLite's 70.1 s" in text, "the headline lacks the CH figures")
check("1w async **2.50x** (sqlite)" in text, "the headline lacks the engines' comparison")
check("A **2.00x** / 2.00x" in text, "the headline lacks the YCSB comparison")
check("64M a side: **3.32x** (phash, B 14, P 2)" in text,
      "the headline lacks the radix join's speedup")
check("(results.md#tpc-c)" in text, "the headline lacks its link to the TPC-C section")
check("(results.md#against-the-steps-paper)" in text, "no link to the paper comparison")
check(meta["commit"][:12] in text, "the headline lacks the commit")
status, summary, _ = run(FIXTURES, readme, output)
check(summary.get("readme") == "unchanged", f"a second run changed the README: {summary}")
check(read(readme) == text, "a second run changed the README's text")

# 3. Without markers the README is left alone.
plain = os.path.join(SCRATCH, "PLAIN.md")
with open(plain, "w", encoding="utf-8") as f:
    f.write("# No markers here\n")
status, summary, stderr = run(FIXTURES, plain, output)
check(status == 0, f"exit status {status} with a README without markers")
check(summary.get("readme", "").startswith("left alone"), f"README status: {summary}")
check("warning" in stderr, "no warning for a README without markers")
check(read(plain) == "# No markers here\n", "a README without markers was changed")

# 4. A failed tool is shown as failed, and the report exits 1; a tool measured on another
# commit (tools/run report --only) is marked so.
broken = os.path.join(SCRATCH, "broken")
shutil.copytree(FIXTURES, broken)
record = load("switch.json")
record.update(ok=False, exit_status=3, json=None)
with open(os.path.join(broken, "switch.json"), "w", encoding="utf-8") as f:
    json.dump(record, f)
record = load("lock.json")
record.update(commit="fedcba9876543210fedcba9876543210fedcba98", dirty=True)
with open(os.path.join(broken, "lock.json"), "w", encoding="utf-8") as f:
    json.dump(record, f)
status, summary, _ = run(broken, plain, output)
check(status == 1, f"a failed tool: exit status {status}, want 1")
check(summary.get("failed") == ["switch"], f"failed tools: {summary.get('failed')}")
doc = read(output)
check("**The run failed** (exit status 3)" in doc, "the failure is not shown")
check("*Measured separately: commit `fedcba9876543210fedcba9876543210fedcba98-dirty`" in doc,
      "a record of another commit is not marked")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("report rendering: all checks passed")
