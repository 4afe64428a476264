"""Markdown for docs/results.md: formatting helpers and one renderer per tool.

A renderer takes a tool's saved record (runner.py, tools.py) and all records by name, and
returns the Markdown of its section body: tables and short notes, every figure read from the
record's JSON. A key the JSON lacks is shown as "n/a", never filled in. The only figures typed
here are the STEPS paper's published ones (PAPER below), each labelled as the paper's where it
is shown.
"""

import re
import statistics

NA = "n/a"


# ---- formatting --------------------------------------------------------------------------------

def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def num(value, digits=0):
    """1234567.8 -> '1,234,568'; anything but a number -> 'n/a'."""
    return f"{value:,.{digits}f}" if is_number(value) else NA


def signed_pct(value, digits=1):
    """A change in per cent: '+5.3 %', '-78.4 %'."""
    return f"{value:+.{digits}f} %" if is_number(value) else NA


def ratio(value, digits=2):
    return f"{value:.{digits}f}x" if is_number(value) else NA


def neg(value):
    """A reduction in per cent (positive = fewer) as a change (negative = fewer)."""
    return -value if is_number(value) else None


def runs_text(count):
    return f"{count} run" if count == 1 else f"{count} runs"


def median(values):
    values = [v for v in values if is_number(v)]
    return statistics.median(values) if values else None


def table(header, rows, left=1):
    """A Markdown table; the first `left` columns (text) left-aligned, the others right."""
    assert rows, "a table needs rows"
    assert all(len(r) == len(header) for r in rows), "ragged table"
    assert 1 <= left <= len(header)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join([":---"] * left + ["---:"] * (len(header) - left)) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def kv_table(figures, rows, header=("figure", "value")):
    """rows: (label, key, unit, digits); a missing key shows as n/a."""
    out = []
    for label, key, unit, digits in rows:
        value = figures.get(key)
        cell = num(value, digits)
        if cell != NA and unit:
            cell += " " + unit
        out.append((label, cell))
    return table(header, out)


# ---- micro-benchmarks --------------------------------------------------------------------------

def render_switch(record, _records):
    j = record["json"]
    rows = [
        (f"direct switch in a ring of {j.get('ring', NA)} fibers (the CTX primitive)",
         "direct_switch_ns", "ns", 2),
        ("scheduler round trip: two fibers yield through the run queue",
         "scheduler_roundtrip_ns", "ns", 2),
        ("cross-worker wake-up round trip (a Baton each way, 2 workers)",
         "cross_worker_roundtrip_us", "us", 2),
    ]
    return kv_table(j, rows) + f"\n\nMedians of {runs_text(j.get('repeat', NA))}, one worker per " \
        "figure (two for the cross-worker one)."


def render_lock(record, _records):
    j = record["json"]
    rows = [
        ("uncontended key lock + release (precomputed LockId), 1 fiber",
         "lock_release_ns", "ns", 1),
        ("the same through LockKey (key bytes hashed, intention checks)",
         "lockkey_release_ns", "ns", 1),
        ("key locks granted per second: 1 worker, 4 fibers, disjoint keys",
         "locks_per_s_1w", "/s", 0),
        ("2 workers, 8 fibers, disjoint keys", "locks_per_s_2w_disjoint", "/s", 0),
        ("2 workers, 8 fibers sharing 1,024 keys (3/4 S, 1/4 X)",
         "locks_per_s_2w_overlap", "/s", 0),
    ]
    return kv_table(j, rows) + f"\n\nMedians of {runs_text(j.get('repeat', NA))}; transactions " \
        "of 10 key locks then ReleaseAll."


def render_log(record, _records):
    j = record["json"]
    fibers = j.get("committer_fibers", NA)
    rows = [
        ("log inserts, 1 KiB records, commit mode async, 1 worker (4 fibers)",
         "insert_mb_per_s_1w", "MB/s", 1),
        ("the same, 2 workers", "insert_mb_per_s_2w", "MB/s", 1),
        ("log inserts, 64-byte records, 1 worker", "insert_records_per_s_64b_1w", "records/s", 0),
        ("the same, 2 workers", "insert_records_per_s_64b_2w", "records/s", 0),
        (f"durable commits, {fibers} fibers on 2 workers (group commit, real fdatasync)",
         "durable_commits_per_s", "/s", 0),
        ("commits per sync in that run", "commits_per_sync", "", 1),
        ("durable commits, 1 fiber", "durable_commits_per_s_1fiber", "/s", 0),
        ("log scan from the start (read + CRC32C)", "scan_mb_per_s", "MB/s", 1),
        ("restart recovery (analysis + redo + undo) on the in-memory file system, per MB redone",
         "recovery_mb_per_s", "MB/s", 1),
        ("the whole Open of that recovery", "recovery_open_seconds", "s", 2),
    ]
    return kv_table(j, rows) + f"\n\nMedians of {runs_text(j.get('repeat', NA))}; the log in " \
        "/tmp (O_DIRECT segment files)."


def render_bufferpool(record, _records):
    j = record["json"]
    out = dict(j)
    if is_number(out.get("fix_unfix_instructions")) and out["fix_unfix_instructions"] < 0:
        out["fix_unfix_instructions"] = None  # the bench's "not measured"
    rows = [
        ("Fix(shared) + Release of a resident page, 1 worker", "fix_unfix_ns", "ns", 1),
        ("the same, one fiber on each of 2 workers (per operation per worker)",
         "fix_unfix_ns_2w", "ns", 1),
        ("instructions per Fix + Release on the hit path (callgrind)",
         "fix_unfix_instructions", "", 0),
    ]
    return kv_table(out, rows) + f"\n\nMedians of {runs_text(j.get('repeat', NA))} over 512 " \
        "resident pages."


def render_btree(record, _records):
    j = record["json"]
    rows = []
    for small in (False, True):
        for workers in (1, 2):
            for store, infix in (("txn", ""), ("raw", "_raw")):
                sfx = f"{infix}_{workers}w" + ("_small_pool" if small else "")
                keys = [f"{op}{sfx}" for op in
                        ("inserts_per_s", "lookups_per_s", "updates_per_s", "scan_rows_per_s")]
                if not any(k in j for k in keys):
                    continue
                runs = j.get(f"lookups_per_s{sfx}_runs")
                rows.append((store, "10 % of the data" if small else "larger than the data",
                             workers, *(num(j.get(k)) for k in keys),
                             len(runs) if isinstance(runs, list) else NA))
    if not rows:
        return "The JSON has no rates."
    text = table(("store", "pool", "workers", "inserts/s", "lookups/s", "updates/s",
                  "scan rows/s", "runs"), rows, left=2)
    pool = j.get("small_pool_bytes")
    pool_text = f"{num(pool / 2**20)} MiB" if is_number(pool) and pool > 0 else "not run"
    text += (f"\n\n{num(j.get('keys'))} 8-byte keys with {j.get('value_bytes', NA)}-byte values, "
             f"{num(j.get('ops'))} operations per phase. txn: every operation its own "
             f"serializable transaction through `sm/sm.h` (key-range locks, logged, "
             f"{j.get('commit_mode', NA)} commit, STEPS {j.get('steps', NA)}); raw: the B-tree "
             f"alone. Miss interleaving {j.get('miss_interleaving', NA)}. Figures are medians of "
             f"the runs; the small pool ({pool_text}) runs time the inserts of the last eighth "
             "of the keys and a quarter of the other operations.")
    return text


def render_crash(record, _records):
    j = record["json"]
    rows = [
        ("cycles (SIGKILL, then recovery and the checks)", "cycles"),
        ("acknowledged New-Orders", "acknowledged_commits"),
        ("lost acknowledged New-Orders", "lost_commits"),
        ("incomplete acknowledged New-Orders", "incomplete_commits"),
        ("consistency failures (conditions 1-4)", "consistency_failures"),
        ("B-tree verifier failures", "verify_failures"),
        ("failed recoveries", "recovery_failures"),
        ("other child failures", "child_failures"),
        ("kills while running / in recovery", None),
        ("recoveries", "recoveries"),
        ("cycles with background checkpoints", "checkpoint_cycles"),
        ("records redone, in all", "redo_records"),
        ("loser transactions rolled back, in all", "losers"),
        ("torn pages repaired", "torn_pages_repaired"),
        ("longest open (recovery), ms", "max_open_ms"),
        ("longest check, ms", "max_check_ms"),
        ("wall time, s", "seconds"),
    ]
    out = []
    for label, key in rows:
        if key is None:
            out.append((label, f"{num(j.get('kills_during_run'))} / "
                               f"{num(j.get('kills_during_recovery'))}"))
        else:
            out.append((label, num(j.get(key), 1 if key.endswith(("_ms", "seconds")) else 0)))
    passed = j.get("passed")
    verdict = "passed" if passed is True else "FAILED" if passed is False else NA
    return (table(("figure", "value"), out) +
            f"\n\nResult: **{verdict}** (scale {j.get('scale', NA)}, seed {j.get('seed', NA)}). "
            f"The same choices again: `{j.get('replay', NA)}`.")


def render_htap(record, _records):
    rows = []
    for key, j in sorted(record["json"].items(), key=lambda kv: int(kv[0][1:])):
        rows.append((f"{j.get('warehouses')} warehouses, {j.get('users')} users, "
                     f"{j.get('workers')} workers",
                     num(j.get("tpcc_alone_tx_per_s")), num(j.get("tpcc_with_queries_tx_per_s")),
                     signed_pct(-100 * j["tpcc_slowdown"]) if is_number(j.get("tpcc_slowdown"))
                     else NA,
                     num(j.get("queries_per_hour_alone")),
                     num(j.get("queries_per_hour_with_tpcc")),
                     j.get("consistency", NA)))
    return table(("database", "TPC-C alone, tx/s", "TPC-C with queries, tx/s", "TPC-C change",
                  "queries/h alone", "queries/h with TPC-C", "conditions 1-4"), rows)


def render_query(record, _records):
    """`bench query`: per query ours against SQLite, then the callgrind figures per row read."""
    j = record["json"]
    rows, profiled = [], []
    for n in range(1, 23):
        k = f"ch_q{n}_"
        if k + "ms" not in j:
            continue
        rows.append((f"Q{n}", num(j[k + "ms"], 1), num(j.get(k + "sqlite_ms"), 1),
                     ratio(j.get(k + "sqlite_ratio")), num(j.get(k + "rows")),
                     num(j.get(k + "rows_read")), num(j.get(k + "ms_2t"), 1),
                     ratio(j.get(k + "speedup_2t"))))
        if k + "instructions_per_row_read" in j:
            profiled.append((f"Q{n}", num(j[k + "instructions_per_row_read"]),
                             num(j.get(k + "l1i_misses_per_row_read"), 3),
                             num(j.get(k + "l1d_misses_per_row_read"), 3),
                             num(j.get(k + "mispredicts_per_row_read"), 2)))
    rows.append(("total", num(j.get("ch_total_ms"), 1), num(j.get("sqlite_total_ms"), 1),
                 f"**{ratio(j.get('sqlite_ratio'))}**", "", "", num(j.get("ch_total_ms_2t"), 1),
                 f"**{ratio(j.get('ch_total_speedup_2t'))}**"))
    match = {True: "all 22 results equal SQLite's", False: "**results differ from SQLite's**"}
    out = (f"{j.get('warehouses', NA)} warehouses; the median of {j.get('repeat', NA)} runs of "
           f"ours and of {j.get('sqlite_repeat', NA)} in SQLite, alternating; our buffer pool "
           f"and SQLite's page cache "
           f"{num(j.get('buffer_pool_bytes', 0) / 2**20)} MiB; "
           f"{match.get(j.get('results_match'), NA)}; queries slower than SQLite: "
           f"{j.get('queries_slower_than_sqlite', NA)}.\n\n" +
           table(("query", "ours, ms", "SQLite, ms", "SQLite / ours", "rows out", "rows read",
                  "ours on 2 threads, ms", "1 thread / 2"), rows))
    if profiled:
        out += ("\n\nPer row read from the tables (callgrind, L1-I 32 KiB 8-way, L1-D 48 KiB "
                "12-way; the second run of the query in the process):\n\n" +
                table(("query", "instructions", "L1-I misses", "L1-D misses", "mispredicts"),
                      profiled))
    for n in range(1, 23):
        operators = j.get(f"ch_q{n}_operators")
        if isinstance(operators, list) and operators:
            out += f"\n\nQ{n} by operator (callgrind; self: its children excluded):\n\n"
            out += render_operators(operators)
    return out


def render_operators(operators):
    """One profiled query's operators, indented as a tree, with their own costs."""
    rows = []
    for op in operators:
        rows_in = op.get("rows_in", 0)
        self_ir = op.get("self_instructions", 0)
        rows.append(("&nbsp;" * 2 * op.get("depth", 0) + str(op.get("operator", NA)),
                     num(rows_in), num(op.get("rows")), num(op.get("instructions")),
                     num(self_ir), num(self_ir / rows_in, 1) if rows_in else NA,
                     num(op.get("self_l1i_misses")), num(op.get("self_l1d_misses")),
                     num(op.get("self_mispredicts"))))
    return table(("operator", "rows in", "rows out", "instructions", "self", "self per row in",
                  "self L1-I misses", "self L1-D misses", "self mispredicts"), rows)


PAPER_QUERIES = (("q2", "Query 2: COUNT"), ("q1", "Query 1: SUM, AVG, COUNT"),
                 ("q3_nlj", "Query 3, index nested-loop join"), ("q3_hash", "Query 3, hash join"),
                 ("q3_merge", "Query 3, merge join"))


def _geometries(j):
    """The L1-I geometries of a query-icache record, as its keys name them, larger first."""
    found = {m.group(1) for m in (re.fullmatch(r"q1\.off_(\d+k\d+w)", k) for k in j) if m}
    return sorted(found, key=lambda g: -int(g.split("k")[0]))


def _geometry_name(g):
    """'16k4w' -> '16 KiB 4-way'."""
    return g.replace("k", " KiB ").replace("w", "-way")


def render_buffers(record, _records):
    """`tools/run query-icache`: the buffer operator's experiments."""
    j = record["json"]
    geometries = _geometries(j)
    if not geometries:
        return "The run recorded no callgrind figures."
    threshold = j.get("auto_threshold")
    threshold = threshold if isinstance(threshold, str) else num(threshold)
    out = (f"Under callgrind the order lines of districts 1-{j.get('callgrind_districts', NA)} "
           f"of warehouse 1 ({j.get('warehouses', NA)}-warehouse CH data); buffers of "
           f"{num(j.get('buffer_tuples'))} tuples; `auto` is refinement with a threshold of "
           f"{threshold} rows. Figures per order line read; the cycle "
           "estimate is KCachegrind's (instructions + 10 x (L1 misses + mispredictions) + 100 x "
           "last-level misses).\n")
    for g in geometries:
        rows = []
        for q, title in PAPER_QUERIES:
            for v in ("off", "on", "auto"):
                f = j.get(f"{q}.{v}_{g}")
                if not f:
                    continue
                rows.append((title if v == "off" else "", v, num(f.get("instructions"), 1),
                             num(f.get("l1i_misses"), 3), num(f.get("l1d_misses"), 3),
                             num(f.get("mispredicts"), 3), num(f.get("est_cycles"), 1)))
        out += (f"\nL1-I {_geometry_name(g)}:\n\n" +
                table(("plan", "buffers", "instructions", "L1-I misses", "L1-D misses",
                       "mispredicts", "est. cycles"), rows, left=2) + "\n")
    rows = []
    for q, title in PAPER_QUERIES:
        if f"{q}_l1i_reduction_pct" not in j:
            continue
        rows.append((title, signed_pct(neg(j[f"{q}_l1i_reduction_pct"])),
                     signed_pct(neg(j.get(f"{q}_mispredict_reduction_pct"))),
                     signed_pct(j.get(f"{q}_instructions_increase_pct")),
                     signed_pct(j.get(f"{q}_l1d_increase_pct")),
                     ratio(j.get(f"{q}_wall_speedup"), 3),
                     ratio(j.get(f"{q}_auto_wall_speedup"), 3)))
    if rows:
        wall = j.get("wall_warehouses")
        scope = "all warehouses" if wall == 0 else f"warehouses 1-{wall}"
        out += (f"\nBuffers on against off at L1-I {_geometry_name(geometries[-1])}, and the "
                f"wall clock (medians of "
                f"{j.get('repeat', NA)} alternating native runs over {scope}; speedup = off / "
                "buffered):\n\n" +
                table(("plan", "L1-I misses", "mispredicts", "instructions", "L1-D misses",
                       "wall, on", "wall, auto"), rows) + "\n")
    small = geometries[-1]
    sweep = sorted({int(k[len("sweep"):].split(".")[0]) for k in j if k.startswith("sweep")
                    and k.endswith(f".off_{small}")})
    if sweep:
        rows = []
        for n in sweep:
            off, on = j[f"sweep{n}.off_{small}"], j[f"sweep{n}.on_{small}"]
            rows.append((num(n), num(off.get("est_cycles"), 1), num(on.get("est_cycles"), 1),
                         num(off.get("l1i_misses"), 3), num(on.get("l1i_misses"), 3),
                         num(off.get("l1d_misses"), 3), num(on.get("l1d_misses"), 3),
                         num(j.get(f"sweep{n}.off_ms"), 2), num(j.get(f"sweep{n}.on_ms"), 2)))

        def rows_text(key):
            value = j.get(key)
            return f"{num(value)} rows" if is_number(value) else "never"
        out += (f"\nThe cardinality sweep (Query 1 with `ol_delivery_d > T`; callgrind per order "
                f"line read at L1-I {_geometry_name(small)}, and medians of native runs): "
                f"buffering wins from "
                f"{rows_text('cycles_threshold')} by the cycle estimate and from "
                f"{rows_text('wall_threshold')} by the wall clock; the calibrated threshold is "
                f"**{rows_text('calibrated_threshold')}**.\n\n" +
                table(("rows out of the scan", "est. cycles, off", "on", "L1-I misses, off", "on",
                       "L1-D misses, off", "on", "ms, off", "on"), rows) + "\n")
    sizes = sorted({int(k[len("size"):].split(".")[0]) for k in j if k.startswith("size")
                    and k.endswith(f"_{small}")})
    if sizes:
        base = j.get(f"q1.off_{small}", {})
        rows = [("off", num(base.get("instructions"), 1), num(base.get("l1i_misses"), 3),
                 num(base.get("l1d_misses"), 3), num(base.get("est_cycles"), 1))]
        for n in sizes:
            f = j[f"size{n}.on_{small}"]
            rows.append((num(n), num(f.get("instructions"), 1), num(f.get("l1i_misses"), 3),
                         num(f.get("l1d_misses"), 3), num(f.get("est_cycles"), 1)))
        out += (f"\nBuffer sizes (Query 1, L1-I {_geometry_name(small)}, per order line "
                "read):\n\n" +
                table(("buffer, tuples", "instructions", "L1-I misses", "L1-D misses",
                       "est. cycles"), rows) + "\n")
    if "ch_auto_total_speedup" in j:
        buffered = j.get("ch_auto_buffered_queries")
        names = ", ".join(f"Q{n}" for n in buffered) if buffered else "none"
        rows = [(f"Q{n}", ratio(j.get(f"ch_q{n}_auto_wall_speedup"), 3)) for n in buffered or []]
        lead = ("\nThe CH queries with `--buffers auto` against off (this machine's L1-I, the "
                "calibrated threshold): ")
        if not buffered:
            out += lead + "auto places no buffer in any of the 22: each runs off's plan.\n"
        else:
            out += (lead + f"auto places buffers in {names}; the others run the same plan either "
                    f"way. Over those, medians of {j.get('repeat', NA)} alternating runs: total "
                    f"speedup {ratio(j['ch_auto_total_speedup'], 3)}, the slowest at "
                    f"{ratio(j.get('ch_auto_slowest_ratio'), 3)} of off's time.\n")
        if rows:
            out += "\n" + table(("query", "speedup (off / auto)"), rows) + "\n"
    return out


TPCC_CORE_SETUPS = (("1w", "1 worker, 1 warehouse, async"),
                    ("1w_durable", "1 worker, 1 warehouse, durable"),
                    ("2w", "2 workers, 2 warehouses, async"),
                    ("10wh_async", "2 workers, 10 warehouses, async"),
                    ("10wh_durable", "2 workers, 10 warehouses, durable"))


def render_tpcc_core(record, _records):
    """bench tpcc: throughput per setup (and against a base build), then instructions per type."""
    j = record["json"]
    base = "base_label" in j
    rows = []
    for key, label in TPCC_CORE_SETUPS:
        if f"tx_per_s_{key}" not in j:
            continue
        row = [label, num(j[f"tx_per_s_{key}"])]
        if base:
            row += [num(j.get(f"base_tx_per_s_{key}")),
                    ratio(j[f"tx_per_s_{key}"] / j[f"base_tx_per_s_{key}"])
                    if is_number(j.get(f"base_tx_per_s_{key}")) and j[f"base_tx_per_s_{key}"]
                    else NA]
        rows.append(row)
    header = ["setup", "tx/s"] + ([f"tx/s at {j['base_label']}", "ratio"] if base else [])
    out = table(header, rows) + "\n\n"
    out += (f"Durable over async, 1 worker: **{ratio(j.get('durable_over_async_1w'))}** "
            f"({num(j.get('commits_per_sync_1w_durable'), 1)} commits per sync; the disk's "
            f"sync latency {num(j.get('sync_latency_ms'), 3)} ms median, "
            f"{num(j.get('sync_latency_p90_ms'), 3)} ms p90). "
            f"Two workers over one: **{ratio(j.get('two_workers_over_one'))}**.\n\n")
    type_rows = []
    for key, label in (("mix", "the mix"),) + TXN_TYPES:
        if f"{key}_instructions_per_txn" not in j:
            continue
        row = [label, num(j[f"{key}_instructions_per_txn"])]
        if base:
            row.append(num(j.get(f"base_{key}_instructions_per_txn")))
        type_rows.append(row)
    if type_rows:
        out += "Instructions per transaction (callgrind, 1 worker, 1 warehouse, prewarmed):\n\n"
        out += table(["transaction", "instructions"] + ([f"at {j['base_label']}"] if base else []),
                     type_rows)
    return out


def render_engines(record, _records):
    """`tools/run compare`: per setup and engine the medians, and ours over theirs."""
    j = record["json"]
    rows = []
    for setup in j.get("setups", []):
        workers, _, commit = setup.partition("w_")
        for engine in j.get("engines", []):
            db_bytes = j.get(f"{engine}_database_bytes")
            rows.append((f"{workers} worker{'s' if workers != '1' else ''}, {commit}", engine,
                         num(j.get(f"{engine}_tx_per_s_{setup}")),
                         num(j.get(f"{engine}_p95_ms_{setup}"), 3),
                         num(j.get(f"{engine}_log_bytes_per_tx_{setup}")),
                         num(db_bytes / 2**20, 1) if is_number(db_bytes) else NA,
                         ratio(j.get(f"sm_over_{engine}_{setup}")) if engine != "sm" else "",
                         j.get(f"{engine}_consistency", NA)))
    if not rows:
        return "The JSON has no engines."
    return table(("setup", "engine", "tx/s", "p95 ms", "log bytes/tx", "database MiB",
                  "ours over this", "checks"), rows, left=2) + \
        f"\n\nMedians of {runs_text(j.get('rounds', NA))} of {num(j.get('duration_s'), 1)} s " \
        "each, 1 warehouse, one terminal per worker, every engine with the same cache " \
        f"({j.get('buffer_pool', NA)}); log bytes where the engine reports them; database " \
        "size at the end, log files included. docs/design/engines.md gives each engine's " \
        "settings."


def render_ycsb(record, _records):
    """`tools/run compare --ycsb`: per cell the engines' median ops/s, and ours over the best."""
    j = record["json"]
    engines = j.get("engines", [])
    rows = []
    for cell in j.get("cells", []):
        workload, _, distribution = cell.partition("_")
        rows.append((f"{workload.upper()}, {distribution}",
                     *(num(j.get(f"{e}_ycsb_{cell}_ops_per_s")) for e in engines),
                     j.get(f"best_other_ycsb_{cell}", NA),
                     ratio(j.get(f"sm_over_best_ycsb_{cell}"))))
    if not rows or not engines:
        return "The JSON has no engines."
    return table(("workload", *(f"{e} ops/s" for e in engines), "best other",
                  "ours over the best"), rows, left=1) + \
        f"\n\nMedians of {runs_text(j.get('rounds', NA))} of {num(j.get('duration_s'), 1)} s " \
        f"each; {num(j.get('records'))} records of 100 bytes loaded into every engine; " \
        f"{j.get('workers', NA)} workers, one terminal each; commit {j.get('commit', NA)}; " \
        f"every engine with the same cache ({j.get('buffer_pool', NA)}). " \
        "docs/design/engines.md describes the workloads and each engine's settings."


# ---- the multithreaded operators and the radix-cluster joins -----------------------------------

MT_EXPERIMENTS = (("agg_tuple", "aggregation by tuple size (bytes)"),
                  ("agg_sel", "aggregation by selectivity (%)"),
                  ("agg_distinct", "aggregation by distinct keys"),
                  ("join_size", "joins by inner tuple size (bytes)"),
                  ("join_sel", "joins by inner selectivity (%)"),
                  ("join_matches", "joins by matches per outer tuple"))


def mt_points(j, experiment):
    """(point, algorithm, key) of each measured point of one experiment, in the JSON's order."""
    suffix = "_model_speedup_2t"
    out = []
    for key in j:
        if not key.endswith(suffix) or not key.startswith(experiment + "_"):
            continue
        point, _, algorithm = key[len(experiment) + 1:-len(suffix)].partition("_")
        if point.isdigit() and algorithm:
            out.append((int(point), algorithm, key[:-len(suffix)]))
    return sorted(out, key=lambda p: p[0])


def render_query_mt(record, _records):
    """bench query-mt: per experiment and point the times at 1 and 2 workers, both speedups."""
    j = record["json"]
    out = ""
    for experiment, title in MT_EXPERIMENTS:
        rows = [(num(point), algorithm, num(j.get(f"{key}_ms_1t"), 1),
                 num(j.get(f"{key}_ms_2t"), 1), ratio(j.get(f"{key}_speedup_2t")),
                 ratio(j.get(f"{key}_model_speedup_2t")))
                for point, algorithm, key in mt_points(j, experiment)]
        if not rows:
            continue
        out += (f"**{title[0].upper() + title[1:]}** (a pure computation gained "
                f"{ratio(j.get(f'{experiment}_cpu_speedup_2t'))} from the second worker as the "
                "experiment started; below 2 when another process held a core):\n\n")
        out += table(("point", "algorithm", "ms, 1 worker", "ms, 2 workers", "speedup",
                      "model's speedup"), rows, left=2) + "\n\n"
    if not out:
        return "The JSON has no experiment points."
    out += table(("figure", "value"), [
        ("best aggregation speedup, 2 workers", ratio(j.get("agg_speedup_2t_best"))),
        ("best join speedup, 2 workers", ratio(j.get("join_speedup_2t_best"))),
        ("model's speedup error, median", f"{num(j.get('model_error_pct'), 1)} %"),
        ("model's speedup error, median with both cores free",
         f"{num(j.get('model_error_pct_free_cores'), 1)} % over "
         f"{num(j.get('points_free_cores'))} points"),
        ("model's speedup error, largest", f"{num(j.get('model_error_pct_max'), 1)} %"),
        ("pipeline (partition joins, map aggregation), tuples/s on 2 workers",
         f"{num(j.get('pipeline_tuples_per_s_2t'))} ({ratio(j.get('pipeline_speedup_2t'))})"),
        ("pipeline (sort-merge joins, merge aggregation), tuples/s on 2 workers",
         f"{num(j.get('pipeline_merge_tuples_per_s_2t'))} "
         f"({ratio(j.get('pipeline_merge_speedup_2t'))})"),
        ("memory cost of a streamed line, 1 worker / 2 at once",
         f"{num(j.get('cal_mem_ns'), 1)} / {num(j.get('cal_mem_ns_2t'), 1)} ns"),
    ])
    return out


def radix_sizes(j):
    """The sizes the radix-join run measured ('1m', '4m', ...), smallest first."""
    sizes = [k[len("radix_speedup_"):] for k in j if k.startswith("radix_speedup_")]
    return sorted(sizes, key=lambda s: float(s[:-1]) * (1e6 if s.endswith("m") else 1e3)
                  if s[:-1].replace(".", "").isdigit() else 0)


def render_radix_join(record, _records):
    """bench radix-join: per size the plain hash join and the best radix-clustered joins."""
    j = record["json"]
    rows = []
    for size in radix_sizes(j):
        def join(algo):
            bits = j.get(f"{algo}_bits_{size}")
            passes = j.get(f"{algo}_passes_{size}")
            return (f"{num(j.get(f'{algo}_ms_{size}'), 1)} (B {num(bits)}, P {num(passes)}; "
                    f"model {num(j.get(f'{algo}_pred_ms_{size}'), 1)})")
        rows.append((size.upper(), f"{num(j.get(f'hash_ms_{size}'), 1)} (model "
                     f"{num(j.get(f'hash_pred_ms_{size}'), 1)})", join("phash"), join("radix"),
                     f"**{ratio(j.get(f'radix_speedup_{size}'))}** "
                     f"({j.get(f'best_algo_{size}', NA)})",
                     " / ".join(ratio(j.get(f"{a}_2t_speedup_{size}"))
                                for a in ("hash", "phash", "radix"))))
    if not rows:
        return "The JSON has no sizes."
    out = table(("tuples a side", "plain hash join, ms", "partitioned hash join, ms",
                 "radix join, ms", "plain over best", "2 workers: hash / phash / radix"), rows)
    out += (f"\n\nB: radix bits, P: passes. Plain over best and the 2-worker speedups come "
            f"from the two joins run again alternating, not from the columns' runs. Model error (the calibrated models, largest over "
            f"the plain, best phash and best radix join of every size): "
            f"**{num(j.get('model_error_pct'), 1)} %**; the paper's models as published: "
            f"{num(j.get('paper_model_error_pct'), 1)} %. Huge pages {j.get('huge_pages', NA)} "
            f"({num(j.get('anon_huge_mib'))} MiB in them at the end); at most "
            f"{num(j.get('max_bits_per_pass'))} bits per pass (the TLB's "
            f"{num(j.get('tlb_l1_entries'))} / {num(j.get('tlb_l2_entries'))} entries, from "
            f"{j.get('tlb_source', NA)}).")
    return out


def render_generic(record, _records):
    """Every scalar of a flat JSON object, by key: for a new tool before it has its own table."""
    j = record["json"]
    rows = []
    for key, value in j.items():
        if is_number(value):
            rows.append((f"`{key}`", num(value, 0 if abs(value) >= 100 else 3)))
        elif isinstance(value, (str, bool)):
            rows.append((f"`{key}`", str(value)))
    return table(("key", "value"), rows) if rows else "The JSON has no scalar figures."


# ---- TPC-C -------------------------------------------------------------------------------------

TXN_TYPES = (("new_order", "New-Order"), ("payment", "Payment"), ("order_status", "Order-Status"),
             ("delivery", "Delivery"), ("stock_level", "Stock-Level"))


def dig(obj, *path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def tpcc_groups(record):
    """(config dict, [run JSON of every successful run]) in the order the configs ran."""
    groups = []
    for config in record.get("configs", []):
        runs = [r["json"] for r in record.get("runs", [])
                if r["config"] == config["key"] and r.get("json")]
        groups.append((config, runs))
    return groups


def render_tpcc(record, _records):
    groups = tpcc_groups(record)
    rows, type_rows = [], []
    for config, runs in groups:
        med = lambda *path: median([dig(r, *path) for r in runs])  # noqa: E731
        passed = sum(1 for r in runs if r.get("consistency") == "pass")
        retries = median([(dig(r, "aborts", "deadlock") or 0) +
                          (dig(r, "aborts", "lock_timeout") or 0) for r in runs])
        per_sync = num(med("log", "commits_per_sync"), 1) if config["commit"] == "durable" else "-"
        rows.append((config["label"], f"**{num(med('throughput_tx_per_s'))}**", num(med("nopm")),
                     num(med("latency", "p50_ms"), 3), num(med("latency", "p95_ms"), 3),
                     num(med("latency", "p99_ms"), 3), per_sync, num(retries),
                     f"{passed} of {len(runs)}"))
        for key, title in TXN_TYPES:
            lat = lambda p: med("transactions", key, "latency", p)  # noqa: E731
            type_rows.append((config["label"], title, num(med("transactions", key, "count")),
                              num(lat("p50_ms"), 3), num(lat("p95_ms"), 3), num(lat("p99_ms"), 3),
                              num(lat("max_ms"), 3)))
    if not rows:
        return "No configuration ran."
    text = table(("configuration", "tx/s", "NOPM", "p50 ms", "p95 ms", "p99 ms",
                  "commits per log sync", "retries", "consistency 1-4 pass"), rows)
    rounds = record.get("rounds", NA)
    text += (f"\n\nEach figure is the median over the rounds ({rounds} round"
             f"{'' if rounds == 1 else 's'}; runs of {record.get('duration_s', NA)} s). NOPM: "
             "New-Orders per minute, rollbacks included; not an audited tpmC. Retries: deadlock "
             "victims and lock timeouts, run again. Consistency: conditions 1-4 before and "
             "after the run.\n\n"
             "Latency by transaction type (medians over the rounds):\n\n")
    text += table(("configuration", "type", "count", "p50 ms", "p95 ms", "p99 ms", "max ms"),
                  type_rows, left=2)
    failed = [r for r in record.get("runs", []) if not r.get("ok")]
    if failed:
        text += f"\n\n**{len(failed)} run(s) failed** and are left out: " + ", ".join(
            f"{r['config']} round {r['round']} (exit status {r['exit_status']})" for r in failed)
    return text


# ---- STEPS under valgrind ----------------------------------------------------------------------

WORKLOADS = (("payment", "Payment"), ("mix", "mix (45,43,4,4,4)"),
             ("mix_no_delivery", "mix without Delivery (45,43,4,0,4)"))


def geometry_name(suffix):
    """'' -> '32 KiB 8-way' (steps_bench's default L1-I); '_16k4w' -> '16 KiB 4-way'."""
    if suffix == "":
        return "32 KiB 8-way"
    m = re.fullmatch(r"_(\d+)k(\d+)w", suffix)
    if not m:
        return suffix
    size, ways = int(m.group(1)), int(m.group(2))
    full = " (fully associative)" if size * 1024 // 64 == ways else ""
    return f"{size} KiB {ways}-way{full}"


def tpcc_configs(j):
    """{config suffix: 'W warehouse(s), U users'} from the tpcc_warehouses<suffix> keys."""
    out = {}
    for key, value in j.items():
        m = re.fullmatch(r"tpcc_warehouses(.*)", key)
        if m:
            users = j.get("tpcc_users" + m.group(1), NA)
            out[m.group(1)] = f"{value} warehouse{'s' if value != 1 else ''}, {users} users"
    return out


def split_suffix(sfx, configs):
    """A TPC-C key's suffix -> (geometry suffix, config suffix): the longest config suffix."""
    best = max((c for c in configs if sfx.endswith(c)), key=len, default=None)
    if best is None:
        return sfx, None
    return sfx[:len(sfx) - len(best)], best


def render_fetch(j):
    rows = []
    for key in j:
        m = re.fullmatch(r"index_fetch_l1i_reduction_pct(.*)", key)
        if not m:
            continue
        s = m.group(1)
        rows.append((geometry_name(s), num(j.get("index_fetch_l1i_misses_per_fetch_serial" + s), 2),
                     num(j.get("index_fetch_l1i_misses_per_fetch_steps" + s), 2),
                     signed_pct(neg(j.get(key))),
                     num(j.get("index_fetch_per_extra_fiber_pct" + s), 1) + " %",
                     signed_pct(neg(j.get("index_fetch_mispredict_reduction_pct" + s))),
                     signed_pct(j.get("index_fetch_instructions_increase_pct" + s)),
                     signed_pct(j.get("index_fetch_l1d_increase_pct" + s))))
    if not rows:
        return "The index-fetch microbenchmark did not run (no `index_fetch_*` keys)."
    fibers = j.get("index_fetch_fibers", NA)
    return (f"Index fetch (the paper's section 3.2): {fibers} fibers on one worker, "
            f"{j.get('index_fetch_fetches_per_fiber', NA)} fetches each, serial (STEPS off) "
            "against STEPS, per fetch. Per additional fiber: the L1-I misses each fiber beyond "
            "the first adds with STEPS, as a share of what it adds serially.\n\n" +
            table(("L1-I", "L1-I misses serial", "STEPS", "change", "per additional fiber",
                   "mispredicted branches", "instructions", "L1-D misses"), rows))


def render_steps_tpcc(j):
    configs = tpcc_configs(j)
    rows = []
    for wkey, wtitle in WORKLOADS:
        for key in j:
            m = re.fullmatch(wkey + r"_l1i_reduction_pct(.*)", key)
            if not m:
                continue
            s = m.group(1)
            geometry, config = split_suffix(s, configs)
            rows.append((wtitle, configs.get(config, NA), geometry_name(geometry),
                         f"{num(j.get(f'{wkey}_l1i_misses_per_txn_serial{s}'))} -> "
                         f"{num(j.get(f'{wkey}_l1i_misses_per_txn_steps{s}'))}",
                         signed_pct(neg(j.get(key))),
                         signed_pct(neg(j.get(f"{wkey}_branch_mispredict_reduction_pct{s}"))),
                         num(j.get(f"{wkey}_instructions_per_txn_serial{s}")),
                         signed_pct(j.get(f"{wkey}_instructions_increase_pct{s}")),
                         signed_pct(j.get(f"{wkey}_l1d_increase_pct{s}"))))
    if not rows:
        return "The TPC-C runs did not run (no `payment_*` or `mix_*` keys)."
    transactions = ", ".join(sorted({str(v) for k, v in j.items()
                                     if k.startswith("tpcc_transactions")}))
    return (f"TPC-C under callgrind, one worker, {transactions} measured transactions per run, "
            "serial (STEPS off) -> STEPS, per transaction:\n\n" +
            table(("workload", "configuration", "L1-I", "L1-I misses", "change",
                   "mispredicted branches", "instructions serial", "instructions",
                   "L1-D misses"), rows, left=3))


def render_icache(record, records):
    j = record["json"]
    parts = [render_fetch(j), render_steps_tpcc(j), "### Against the STEPS paper",
             render_paper(j, (records.get("steps-wall") or {}).get("json") or {})]
    return "\n\n".join(parts)


def render_steps_wall(record, _records):
    j = record["json"]
    configs = tpcc_configs(j)
    rows = []
    for wkey, wtitle in WORKLOADS:
        for key in j:
            m = re.fullmatch(wkey + r"_wall_speedup(.*)", key)
            if m:
                rows.append((wtitle, configs.get(m.group(1), NA), ratio(j[key], 3),
                             ratio(j.get(f"{wkey}_wall_auto_ratio{m.group(1)}"), 3)))
    if not rows:
        return "No wall-clock figures (no `*_wall_speedup` keys)."
    return ("Natively, one worker, commit mode none, the database read into the pool first; "
            "transactions per second of STEPS on and of STEPS auto (each worker probes and "
            "runs the faster) divided by STEPS off, each the median of alternating runs:\n\n" +
            table(("workload", "configuration", "on / off", "auto / off"), rows, left=2))


# The STEPS paper's published figures: S. Harizopoulos and A. Ailamaki, "STEPS Towards
# Cache-Resident Transaction Processing", VLDB 2004. Typed from the paper, not measured here;
# shown only in the column labelled as the paper's. Changes in per cent, negative = fewer.
PAPER = {
    # Section 3.2.4, Figure 9: simulated (SIMFLEX) 32 KB 8-way L1-I, 64-byte blocks, index fetch
    # with 10 threads: 89 % fewer L1-I misses, "out of 90 % max possible".
    "fetch_l1i_32k8w_pct": -89,
    "fetch_l1i_max_pct": -90,
    # Section 3.2.3, Figure 8: Pentium III (16 KB 4-way L1-I, 32-byte blocks), 10 threads: L1-I
    # misses "to a third (66 % out of a maximum possible 90 %)"; L1-D misses +109 %.
    "fetch_l1i_piii_pct": -66,
    "fetch_l1d_piii_pct": 109,
    # Section 3.2.3, Figure 8: mispredicted branches -64 % on both CPUs; instructions +1.7 %.
    "fetch_mispredict_pct": -64,
    "fetch_instructions_pct": 1.7,
    # Section 3.2.1, Figure 5: AthlonXP (64 KB 2-way L1-I), L1-I misses each additional thread
    # adds to an index fetch: Shore 985 (cold cache), 373 (warm), STEPS 33; the abstract's
    # "96.7 % reduction ... for each additional concurrent thread" is 1 - 33/985.
    "fetch_extra_shore_cold": 985,
    "fetch_extra_shore_warm": 373,
    "fetch_extra_steps": 33,
    "fetch_extra_reduction_pct": 96.7,
    # Section 4.3, Figure 10: TPC-C Payment at 10, 20 and 30 warehouses (10 users each), AthlonXP:
    # L1-I misses -60 to -65 %, mispredicted branches -41 to -45 %, speedup 16-39 %.
    "payment_l1i_pct": (-60, -65),
    "payment_mispredict_pct": (-41, -45),
    "payment_speedup_pct": (16, 39),
    # Section 1.3, Figure 2b: Payment at 30 warehouses: L1-I -65 %, mispredicted branches -48 %,
    # speedup 39 %, L1-D misses +8 %.
    "payment_30wh_l1i_pct": -65,
    "payment_30wh_mispredict_pct": -48,
    "payment_30wh_l1d_pct": 8,
    # Section 4.3, Figure 11: the mix without Delivery at 10 warehouses: L1-I misses -56 %, against
    # a bound of -77 % for the 4.3 threads a team keeps on average.
    "mix_no_delivery_10wh_l1i_pct": -56,
    "mix_no_delivery_10wh_bound_pct": -77,
}


def ours(j, key, fmt, label=None):
    """'<figure> (<label>)' if the key is there, else None."""
    if key not in j:
        return None
    text = fmt(j[key])
    return f"{text} ({label})" if label else text


def cells(*parts):
    found = [p for p in parts if p]
    return "; ".join(found) if found else "not measured in this run"


def render_paper(j, wall):
    p = PAPER
    pct = lambda v: signed_pct(v, 0) if float(v).is_integer() else signed_pct(v)  # noqa: E731
    rng = lambda t: f"{t[0]:+d} to {t[1]:+d} %"  # noqa: E731
    change = lambda v: signed_pct(neg(v))  # noqa: E731
    wh10, wh1 = "10 warehouses, 100 users", "1 warehouse, 10 users"
    steps_share = 100 * p["fetch_extra_steps"] / p["fetch_extra_shore_warm"]
    cold_share = 100 * p["fetch_extra_steps"] / p["fetch_extra_shore_cold"]
    rows = [
        ("index fetch, 10 threads: L1-I misses",
         f"{pct(p['fetch_l1i_32k8w_pct'])} (of {pct(p['fetch_l1i_max_pct'])} possible); "
         "simulated 32 KB 8-way; 3.2.4, Fig. 9",
         cells(ours(j, "index_fetch_l1i_reduction_pct", change, "32 KiB 8-way"))),
        ("the same, a 16 KB 4-way L1-I",
         f"{pct(p['fetch_l1i_piii_pct'])} (of {pct(p['fetch_l1i_max_pct'])} possible); "
         "Pentium III, 32-byte lines; 3.2.3, Fig. 8",
         cells(ours(j, "index_fetch_l1i_reduction_pct_16k4w", change,
                    "16 KiB 4-way, 64-byte lines"))),
        ("index fetch: L1-I misses an additional thread adds, STEPS as a share of serial",
         f"{steps_share:.1f} % ({p['fetch_extra_steps']} against {p['fetch_extra_shore_warm']}, "
         f"warm; {cold_share:.1f} % against {p['fetch_extra_shore_cold']} cold, the abstract's "
         f"\"{p['fetch_extra_reduction_pct']} % reduction\"); AthlonXP 64 KB 2-way; 3.2.1, Fig. 5",
         cells(ours(j, "index_fetch_per_extra_fiber_pct_64k2w", lambda v: f"{num(v, 1)} %",
                    "64 KiB 2-way, warm"),
               ours(j, "index_fetch_per_extra_fiber_pct", lambda v: f"{num(v, 1)} %",
                    "32 KiB 8-way"))),
        ("index fetch, 10 threads: mispredicted branches",
         f"{pct(p['fetch_mispredict_pct'])}; AthlonXP and Pentium III; 3.2.3, Fig. 8",
         cells(ours(j, "index_fetch_mispredict_reduction_pct", change))),
        ("index fetch, 10 threads: instructions",
         f"{pct(p['fetch_instructions_pct'])}; 3.2.3, Fig. 8",
         cells(ours(j, "index_fetch_instructions_increase_pct", signed_pct))),
        ("index fetch, 10 threads: L1-D misses",
         f"{pct(p['fetch_l1d_piii_pct'])}; Pentium III, 16 KB L1-D; 3.2.3, Fig. 8",
         cells(ours(j, "index_fetch_l1d_increase_pct", signed_pct, "48 KiB 12-way L1-D"))),
        ("TPC-C Payment: L1-I misses",
         f"{rng(p['payment_l1i_pct'])} at 10-30 warehouses, "
         f"{pct(p['payment_30wh_l1i_pct'])} at 30; AthlonXP 64 KB 2-way; 4.3, Fig. 10; "
         "1.3, Fig. 2b",
         cells(ours(j, "payment_l1i_reduction_pct_10wh", change, wh10),
               ours(j, "payment_l1i_reduction_pct", change, wh1))),
        ("TPC-C Payment: mispredicted branches",
         f"{rng(p['payment_mispredict_pct'])} at 10-30 warehouses, "
         f"{pct(p['payment_30wh_mispredict_pct'])} at 30; 4.3, Fig. 10; 1.3, Fig. 2b",
         cells(ours(j, "payment_branch_mispredict_reduction_pct_10wh", change, wh10),
               ours(j, "payment_branch_mispredict_reduction_pct", change, wh1))),
        ("TPC-C Payment: L1-D misses",
         f"{pct(p['payment_30wh_l1d_pct'])} at 30 warehouses; 1.3, Fig. 2b",
         cells(ours(j, "payment_l1d_increase_pct_10wh", signed_pct, wh10),
               ours(j, "payment_l1d_increase_pct", signed_pct, wh1))),
        ("TPC-C mix without Delivery: L1-I misses",
         f"{pct(p['mix_no_delivery_10wh_l1i_pct'])} at 10 warehouses (bound "
         f"{pct(p['mix_no_delivery_10wh_bound_pct'])} for its teams); 4.3, Fig. 11",
         cells(ours(j, "mix_no_delivery_l1i_reduction_pct_10wh", change, wh10),
               ours(j, "mix_no_delivery_l1i_reduction_pct", change, wh1))),
        ("TPC-C Payment: speedup",
         f"{p['payment_speedup_pct'][0]}-{p['payment_speedup_pct'][1]} % faster (CPU cycles "
         "for the same transactions) at 10-30 warehouses; 4.3, Fig. 10",
         cells(ours(wall, "payment_wall_speedup", lambda v: ratio(v, 3),
                    f"{wh1}, tx/s natively, STEPS on / off"))),
    ]
    return ("The paper's column holds the figures the STEPS paper (Harizopoulos and Ailamaki, "
            "VLDB 2004) published for Shore, with its section and figure; they are constants "
            "in `tools/report/render.py`, not measured here. The paper counted on real "
            "AthlonXP and Pentium III CPUs (and a simulator for Fig. 9); this build's column "
            "is callgrind's simulation.\n\n" +
            table(("measure", "the paper (Shore)", "this build"), rows, left=3))


# ---- the checked-in CTX placement ---------------------------------------------------------------

def render_placement(record, _records):
    j = record["json"]
    sites = j.get("sites", [])
    text = (f"`{j.get('path', NA)}`: {len(sites)} CTX site(s) enabled. The file is read, not "
            "measured by this run; its header records the run of `tools/run ctx-place` that "
            "chose it.\n\n")
    if sites:
        text += table(("site", "fragments that end at it; why chosen"),
                      [(f"`{s['name']}`", s["detail"]) for s in sites], left=2) + "\n\n"
    header = j.get("header", [])
    if header:
        text += "Its header:\n\n```\n" + "\n".join(header) + "\n```"
    return text
