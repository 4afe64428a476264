"""The measuring tools the report runs, and the README's headline rows.

TOOLS is the list: each entry names a tool (its --only name and the stem of its files in the
save directory), the section of docs/results.md it fills, the command of each mode, and the
renderer of its JSON. A new benchmark is one entry; `bench("query", ...)` with
`render.render_generic` is enough to start with.

A tool's runner returns a record: `commands` (as run, from the repository root), `json` (its
final JSON line, or None), `ok`, and whatever else its renderer reads; report.py adds the
name, mode, commit, start time and duration and saves it as <save-dir>/<name>.json.
"""

import os
import shutil

import render
from runner import log, run_command


class Tool:
    def __init__(self, name, title, about, run, render_fn):
        assert name and name.replace("-", "").isalnum(), name
        self.name = name
        self.title = title
        self.about = about
        self.run = run
        self.render = render_fn


def single(argv_of):
    """A runner for a tool that is one command whose last stdout line is its JSON."""
    def run(ctx, name):
        result = run_command(ctx, argv_of(ctx), name)
        return {"commands": [result["command"]], "json": result["json"], "ok": result["ok"],
                "exit_status": result["exit_status"]}
    return run


def by_mode(quick, default, full):
    return lambda ctx: {"quick": quick, "default": default, "full": full}[ctx.mode]


def bench(name, quick, default, full):
    """`tools/run bench NAME ARGS`, ARGS by mode."""
    args = by_mode(quick, default, full)
    return single(lambda ctx: ctx.tools_run("bench", name, *args(ctx)))


def verb(name, quick, default, full):
    args = by_mode(quick, default, full)
    return single(lambda ctx: ctx.tools_run(name, *args(ctx)))


# ---- TPC-C: several configurations, alternating rounds, each run on a fresh copy -------------

TPCC_CONFIGS = (
    {"key": "1wk-async", "label": "1 worker, 1 warehouse, 10 users, async commit",
     "warehouses": 1, "workers": 1, "users": 10, "commit": "async"},
    {"key": "1wk-durable", "label": "1 worker, 1 warehouse, 10 users, durable commit",
     "warehouses": 1, "workers": 1, "users": 10, "commit": "durable"},
    {"key": "2wk-async", "label": "2 workers, 2 warehouses, 20 users, async commit",
     "warehouses": 2, "workers": 2, "users": 20, "commit": "async"},
    {"key": "2wk-durable", "label": "2 workers, 2 warehouses, 20 users, durable commit",
     "warehouses": 2, "workers": 2, "users": 20, "commit": "durable"},
)
TPCC_ROUNDS = {"quick": (1, 2), "default": (3, 8), "full": (5, 20)}  # (rounds, seconds per run)


def tpcc_args(config, seconds):
    """The `tpcc run` options of a configuration, but the database and the output format."""
    return ["--workers", str(config["workers"]), "--users", str(config["users"]),
            "--commit", config["commit"], "--steps", "off", "--prewarm",
            "--duration", str(seconds)]


def load_tpcc(ctx, tpcc, warehouses, name):
    """Loads a fresh database of `warehouses` (a load of this build); its dir or None."""
    db = os.path.join(ctx.root, "data", "report", f"tpcc-{warehouses}w")
    shutil.rmtree(db, ignore_errors=True)
    os.makedirs(os.path.dirname(db), exist_ok=True)
    argv = [tpcc, "load", "--db", ctx.rel(db), "-w", str(warehouses), "--output", "json"]
    result = run_command(ctx, argv, f"{name}.load-{warehouses}w")
    return db if result["ok"] else None, result


def run_tpcc(ctx, name):
    rounds, seconds = TPCC_ROUNDS[ctx.mode]
    tpcc = ctx.build_path("tpcc", "tpcc")
    record = {"commands": [], "configs": [], "runs": [], "loads": [], "rounds": rounds,
              "duration_s": seconds, "json": None}
    dbs = {}
    for warehouses in sorted({c["warehouses"] for c in TPCC_CONFIGS}):
        dbs[warehouses], result = load_tpcc(ctx, tpcc, warehouses, name)
        record["loads"].append(result)
        record["commands"].append(result["command"])
    scratch = os.path.join(ctx.root, "data", "report", "tpcc-run")
    for config in TPCC_CONFIGS:
        args = tpcc_args(config, seconds)
        record["configs"].append(dict(config, args=" ".join(args)))
        record["commands"].append(ctx.display(
            [tpcc, "run", "--db", ctx.rel(scratch), *args, "--output", "json"]))
    for r in range(1, rounds + 1):
        for config in TPCC_CONFIGS:
            src = dbs[config["warehouses"]]
            if src is None:
                continue  # its load failed
            log(f"  round {r} of {rounds}: {config['label']}")
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(src, scratch, symlinks=True)
            argv = [tpcc, "run", "--db", ctx.rel(scratch), *tpcc_args(config, seconds),
                    "--output", "json"]
            result = run_command(ctx, argv, f"{name}.{config['key']}.r{r}")
            record["runs"].append(dict(result, config=config["key"], round=r))
    shutil.rmtree(scratch, ignore_errors=True)
    record["ok"] = (all(x["ok"] for x in record["loads"]) and
                    len(record["runs"]) == rounds * len(TPCC_CONFIGS) and
                    all(x["ok"] for x in record["runs"]))
    record["partial"] = any(x["ok"] for x in record["runs"])
    return record


# ---- HTAP: the TPC-C mix and CH-benCHmark query streams at once, and each alone ---------------

HTAP_WAREHOUSES = {"quick": (1,), "default": (1, 10), "full": (1, 10)}
HTAP_SECONDS = {"quick": 2, "default": 20, "full": 60}


def run_htap(ctx, name):
    """`tpcc htap` with one query stream on a fresh CH database of each size."""
    tpcc = ctx.build_path("tpcc", "tpcc")
    seconds = HTAP_SECONDS[ctx.mode]
    record = {"commands": [], "runs": [], "loads": [], "json": None, "duration_s": seconds}
    for warehouses in HTAP_WAREHOUSES[ctx.mode]:
        db = os.path.join(ctx.root, "data", "report", f"ch-{warehouses}w")
        shutil.rmtree(db, ignore_errors=True)
        os.makedirs(os.path.dirname(db), exist_ok=True)
        pool = "4G" if warehouses >= 10 else "1G"
        load = [tpcc, "load", "--ch", "--db", ctx.rel(db), "-w", str(warehouses),
                "--buffer-pool", pool, "--output", "json"]
        loaded = run_command(ctx, load, f"{name}.load-{warehouses}w")
        record["loads"].append(loaded)
        record["commands"].append(loaded["command"])
        argv = [tpcc, "htap", "--db", ctx.rel(db), "--query-streams", "1", "--duration",
                str(seconds), "--buffer-pool", pool, "--output", "json"]
        result = run_command(ctx, argv, f"{name}.{warehouses}w") if loaded["ok"] else loaded
        record["commands"].append(result["command"])
        record["runs"].append(dict(result, warehouses=warehouses))
        shutil.rmtree(db, ignore_errors=True)
    record["ok"] = all(r["ok"] for r in record["runs"])
    record["json"] = {f"w{r['warehouses']}": r["json"] for r in record["runs"] if r["json"]}
    return record


# ---- the checked-in CTX placement: read, not measured -----------------------------------------

PLACEMENT = "steps/ctx_placement.txt"


def read_placement(ctx, _name):
    path = os.path.join(ctx.root, PLACEMENT)
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f]
    except OSError as e:
        log(f"  cannot read {PLACEMENT}: {e}")
        return {"commands": [], "json": None, "ok": False, "exit_status": None}
    header = [line for line in lines if line.startswith("#")]
    sites = []
    for line in lines:
        if line.strip() and not line.startswith("#"):
            site, _, detail = line.strip().partition(" ")
            sites.append({"name": site, "detail": detail.strip()})
    return {"commands": [], "ok": True, "exit_status": 0,
            "json": {"path": PLACEMENT, "header": header, "sites": sites}}


# ---- the list -----------------------------------------------------------------------------------

TOOLS = [
    Tool("tpcc", "TPC-C",
         "The TPC-C driver (`build/tpcc/tpcc`), STEPS off: each configuration runs once per "
         "round, the configurations alternating, each run on a fresh copy of a database loaded "
         "by this build and read into the buffer pool first (`--prewarm`).",
         run_tpcc, render.render_tpcc),
    Tool("tpcc-core", "TPC-C per core",
         "`tools/run bench tpcc`: 1 worker async and durable and 2 workers async, each run from "
         "a fresh copy of a loaded database, rounds alternating; the disk's sync latency; and "
         "the instructions per transaction of the mix and of each type alone under callgrind "
         "(one worker, prewarmed, no commit wait: deterministic counts).",
         bench("tpcc", ["--rounds", "1", "--duration", "1"], [], ["--big"]),
         render.render_tpcc_core),
    Tool("icache", "STEPS under valgrind",
         "`tools/run icache` (`steps_bench`): the STEPS paper's index-fetch microbenchmark and "
         "TPC-C on one worker, STEPS off against on, counted by valgrind's cache and branch "
         "simulators (callgrind; L1-D 48 KiB 12-way, LL 2 MiB 16-way). Counts are "
         "deterministic: a busy machine slows the run, not the figures.",
         verb("icache", ["--quick"], [],
              ["--tpcc-geometry", "32768,8,64", "--tpcc-geometry", "32768,512,64"]),
         render.render_icache),
    Tool("steps-wall", "STEPS wall clock",
         "`tools/run icache --no-fetch --wall-clock N`: TPC-C natively with STEPS off, on and "
         "auto. Its run repeats the callgrind TPC-C runs of the one-warehouse configuration "
         "(the same counts as above); only its wall-clock figures are shown here.",
         verb("icache", ["--quick", "--no-fetch", "--tpcc-workloads", "mix", "--wall-clock", "1",
                         "--wall-seconds", "1"],
              ["--no-fetch", "--tpcc-config", "1x10", "--wall-clock", "3", "--wall-seconds", "3"],
              ["--no-fetch", "--tpcc-config", "1x10", "--wall-clock", "5", "--wall-seconds", "4"]),
         render.render_steps_wall),
    Tool("ctx-placement", "CTX placement",
         "The CTX points STEPS switches at in this build: the checked-in "
         "`steps/ctx_placement.txt`, chosen with valgrind by `tools/run ctx-place`.",
         read_placement, render.render_placement),
    Tool("btree", "B-tree",
         "`tools/run bench btree`: table throughput, every operation its own transaction, next "
         "to the bare B-tree. The default report runs 1,000,000 keys (about a tenth of the "
         "benchmark's own default of 10,000,000, which takes about 25 minutes); "
         "`tools/run report --full` runs the default.",
         bench("btree", ["--quick", "--repeat", "1"], ["--keys", "1000000"], []),
         render.render_btree),
    Tool("switch", "Fiber switch", "`tools/run bench switch`: the fiber runtime's switch costs.",
         bench("switch", ["--repeat", "1", "--iterations", "200000"], [], ["--repeat", "11"]),
         render.render_switch),
    Tool("lock", "Lock manager",
         "`tools/run bench lock`: the lock manager's fast path and lock-table throughput.",
         bench("lock", ["--repeat", "1", "--iterations", "500000", "--seconds", "0.2"], [],
               ["--repeat", "11"]),
         render.render_lock),
    Tool("log", "Write-ahead log",
         "`tools/run bench log`: log inserts, group commit on this machine's disk, the log "
         "scan and restart recovery.",
         bench("log", ["--repeat", "1", "--seconds", "0.2", "--recovery-mb", "16",
                       "--recovery-txns", "2000"], [], ["--repeat", "7", "--seconds", "1"]),
         render.render_log),
    Tool("bufferpool", "Buffer pool",
         "`tools/run bench bufferpool`: the buffer pool's hit path.",
         bench("bufferpool", ["--repeat", "1", "--ops", "200000"], [], ["--repeat", "11"]),
         render.render_bufferpool),
    Tool("query", "CH-benCHmark queries against SQLite",
         "`tools/run bench query`: the 22 CH-benCHmark queries on the query layer and, in the "
         "same process, as SQL in SQLite 3 on the same data (exported as CSV after the TPC-C "
         "mix ran for a minute; tables WITHOUT ROWID on the same keys, the same secondary "
         "indexes), every result checked equal; one thread, and (`--threads 2`) ours on two "
         "threads beside it. `--callgrind` adds the footprint per row read of a "
         "scan-and-aggregate (Q1), a selective scan (Q6) and a join (Q3), and the same per "
         "operator.",
         bench("query", ["-w", "1", "--tpcc-seconds", "2", "--repeat", "1", "--threads", "2"],
               ["--threads", "2", "--callgrind", "1,6,3"],
               ["--repeat", "5", "--threads", "2", "--callgrind", "1,6,3"]),
         render.render_query),
    Tool("buffers", "The buffer operator (Zhou & Ross)",
         "`tools/run query-icache`: the paper's Queries 1-3 on CH data, buffers off, on (above "
         "every eligible operator) and auto (plan refinement), under callgrind at two L1-I sizes "
         "and natively; the cardinality sweep that calibrates the threshold (`auto` uses the one "
         "checked in); buffer sizes; and the 22 CH queries with `--buffers auto` against off.",
         verb("query-icache", ["-w", "1", "--tpcc-seconds", "2", "--repeat", "1",
                               "--i1", "16384,4,64", "--callgrind-districts", "1",
                               "--cardinalities", "10,1000", "--buffer-sizes", "10,1000"],
              [], ["--repeat", "7", "--callgrind-districts", "10", "--wall-warehouses", "0"]),
         render.render_buffers),
    Tool("query-mt", "Multithreaded operators (Krikellas et al.)",
         "`tools/run bench query-mt`: the paper's Figures 5-10 on synthetic NSM tables, each "
         "operator at 1 and 2 workers beside the speedup its analytical model (equations 1-25, "
         "calibrated on this machine at the start of the run) predicts.",
         bench("query-mt", ["--quick"], [], ["--repeat", "5"]),
         render.render_query_mt),
    Tool("radix-join", "Radix-cluster joins (Manegold et al.)",
         "`tools/run bench radix-join`: 8-byte [key, oid] tuples, unique uniform keys, hit rate "
         "1; the plain hash join against the partitioned hash join and the radix join at the "
         "radix bits and passes their calibrated cost models rank best, each timed and "
         "predicted, and on 2 workers.",
         bench("radix-join", ["--sizes", "1m", "--repeat", "1", "--threads", "1"], [],
               ["--repeat", "5"]),
         render.render_radix_join),
    Tool("htap", "HTAP: TPC-C beside the CH-benCHmark queries",
         "`tpcc htap`: three phases of equal length on a fresh CH database (`tpcc load --ch`): "
         "the TPC-C mix alone (10 users per warehouse, durable commits), the mix with one "
         "stream running the 22 CH-benCHmark queries in order, and the stream alone.",
         run_htap, render.render_htap),
    Tool("engines", "TPC-C on other embedded engines",
         "`tools/run compare`: the TPC-C mix on our engine and on SQLite, LMDB, RocksDB, "
         "Berkeley DB and WiredTiger (those this build has adapters for), run round robin with "
         "identical parameters.",
         verb("compare", ["--duration", "1", "--warmup", "0", "--rounds", "1", "--workers", "1",
                          "--commit", "async"],
              [], ["--rounds", "5"]),
         render.render_engines),
    Tool("ycsb", "YCSB on the embedded engines",
         "`tools/run compare --ycsb --records 10000000 --buffer-pool 4G`: YCSB workloads A, B, "
         "C and E, each with uniform and Zipfian requests, over YCSB's 10 M records, on our "
         "engine and the others this build has adapters for, one operation per transaction, run "
         "round robin with identical parameters and a cache that holds the records.",
         verb("compare", ["--ycsb", "--records", "10000", "--duration", "0.5", "--warmup", "0",
                          "--rounds", "1"],
              ["--ycsb", "--records", "10000000", "--buffer-pool", "4G"],
              ["--ycsb", "--records", "10000000", "--buffer-pool", "4G", "--rounds", "5"]),
         render.render_ycsb),
    Tool("crash-test", "Crash torture",
         "`tools/run crash-test`: a small TPC-C database run with durable commits in a child "
         "process and killed with SIGKILL, cycle after cycle; after every recovery no "
         "acknowledged New-Order may be lost, conditions 1-4 must hold and the B-tree "
         "verifier must pass.",
         verb("crash-test", ["--cycles", "3"], ["--cycles", "50"],
              ["--cycles", "1000", "--reload-every", "100", "--kill-ms", "50-250"]),
         render.render_crash),
]

TOOL_NAMES = [t.name for t in TOOLS]


# ---- the README's headline rows -----------------------------------------------------------------

def _json(records, name):
    record = records.get(name) or {}
    return record.get("json") or {}


def _command(records, name):
    commands = (records.get(name) or {}).get("commands") or []
    return f"`{commands[-1]}`" if commands else "n/a"


def _tpcc(key):
    def value(records):
        record = records.get("tpcc") or {}
        for config, runs in render.tpcc_groups(record):
            if config["key"] == key and runs:
                tx = render.median([r.get("throughput_tx_per_s") for r in runs])
                return f"**{render.num(tx)} tx/s** (median of {len(runs)})"
        return None

    def command(records):
        for config in (records.get("tpcc") or {}).get("configs", []):
            if config["key"] == key:
                return f"`tpcc run {config['args']}`"
        return "n/a"
    return value, command


def _payment(records):
    j = _json(records, "icache")
    if "payment_l1i_reduction_pct" not in j:
        return None
    return (f"{render.num(j.get('payment_l1i_misses_per_txn_serial'))} -> "
            f"{render.num(j.get('payment_l1i_misses_per_txn_steps'))} per transaction "
            f"(**{render.signed_pct(-j['payment_l1i_reduction_pct'])}**)")


def _paper_mix(records):
    j = _json(records, "icache")
    key = "mix_no_delivery_l1i_reduction_pct_10wh"
    if key not in j:
        return None
    return (f"**{render.signed_pct(-j[key])}** (the paper: "
            f"{render.signed_pct(render.PAPER['mix_no_delivery_10wh_l1i_pct'], 0)})")


def _wall(records):
    j = _json(records, "steps-wall")
    if "mix_wall_speedup" not in j:
        return None
    return (f"on {render.ratio(j['mix_wall_speedup'])}, "
            f"auto {render.ratio(j.get('mix_wall_auto_ratio'))} of off")


def _btree(records):
    j = _json(records, "btree")
    if "lookups_per_s_1w" not in j:
        return None
    return (f"lookups **{render.num(j['lookups_per_s_1w'])}/s**, inserts "
            f"**{render.num(j.get('inserts_per_s_1w'))}/s** ({render.num(j.get('keys'))} keys)")


def _switch(records):
    j = _json(records, "switch")
    v = j.get("direct_switch_ns")
    return f"**{render.num(v, 2)} ns**" if render.is_number(v) else None


def _mix_instructions(records):
    j = _json(records, "tpcc-core")
    v = j.get("mix_instructions_per_txn")
    if not render.is_number(v):
        return None
    return (f"**{render.num(v)}** (Stock-Level {render.num(j.get('stock_level_instructions_per_txn'))}, "
            f"Delivery {render.num(j.get('delivery_instructions_per_txn'))})")


def _commits(records):
    j = _json(records, "log")
    v = j.get("durable_commits_per_s")
    if not render.is_number(v):
        return None
    return (f"**{render.num(v)}/s** ({j.get('committer_fibers', 'n/a')} fibers, "
            f"{render.num(j.get('commits_per_sync'), 1)} per sync)")


def _crash(records):
    j = _json(records, "crash-test")
    if "cycles" not in j:
        return None
    verdict = "passed" if j.get("passed") else "FAILED"
    return (f"{render.num(j['cycles'])} cycles: **{render.num(j.get('lost_commits'))} lost** of "
            f"{render.num(j.get('acknowledged_commits'))} acknowledged New-Orders ({verdict})")


def _query(records):
    j = _json(records, "query")
    if "sqlite_ratio" not in j:
        return None
    same = "results equal" if j.get("results_match") else "results DIFFER"
    return (f"{j.get('warehouses', 'n/a')} warehouses: "
            f"{render.num(j['ch_total_ms'] / 1000, 1)} s against SQLite's "
            f"{render.num(j.get('sqlite_total_ms', 0) / 1000, 1)} s "
            f"(**{render.ratio(j['sqlite_ratio'])}** faster; {same})")


def _query_threads(records):
    j = _json(records, "query")
    if "ch_total_speedup_2t" not in j:
        return None
    return (f"{j.get('warehouses', 'n/a')} warehouses: "
            f"{render.num(j['ch_total_ms'] / 1000, 1)} s on 1 thread, "
            f"{render.num(j['ch_total_ms_2t'] / 1000, 1)} s on 2 "
            f"(**{render.ratio(j['ch_total_speedup_2t'])}**)")


def _engines(records):
    """Per setup, ours over the fastest other engine of the comparison."""
    j = _json(records, "engines")
    others = [e for e in j.get("engines", []) if e != "sm"]
    cells = []
    for setup in j.get("setups", []):
        ours = j.get(f"sm_tx_per_s_{setup}")
        theirs = [(j.get(f"{e}_tx_per_s_{setup}"), e) for e in others]
        theirs = [(v, e) for v, e in theirs if render.is_number(v)]
        if not render.is_number(ours) or not theirs:
            continue
        best, engine = max(theirs)
        workers, _, commit = setup.partition("w_")
        cells.append(f"{workers}w {commit} **{render.ratio(ours / best)}** ({engine})")
    if not cells:
        return None
    return "ours over the fastest other engine: " + ", ".join(cells)


def _ycsb(records):
    """Per workload, ours over the fastest other engine, uniform / Zipfian."""
    j = _json(records, "ycsb")
    cells = []
    for workload in ("a", "b", "c", "e"):
        ratios = [j.get(f"sm_over_best_ycsb_{workload}_{d}") for d in ("uniform", "zipfian")]
        if all(render.is_number(r) for r in ratios):
            cells.append(f"{workload.upper()} **{render.ratio(ratios[0])}** / "
                         f"{render.ratio(ratios[1])}")
    if not cells:
        return None
    return (f"{render.num(j.get('records'))} records, ours over the fastest other "
            f"(uniform / Zipfian): " + ", ".join(cells))


def _radix(records):
    j = _json(records, "radix-join")
    sizes = render.radix_sizes(j)
    if not sizes:
        return None
    size = sizes[-1]
    return (f"{size.upper()} a side: **{render.ratio(j.get(f'radix_speedup_{size}'))}** "
            f"({j.get(f'best_algo_{size}', 'n/a')}, B {render.num(j.get(f'best_bits_{size}'))}, "
            f"P {render.num(j.get(f'best_passes_{size}'))}); model error "
            f"{render.num(j.get('model_error_pct'), 1)} %")


def _htap_command(warehouses):
    def command(records):
        for c in (records.get("htap") or {}).get("commands") or []:
            if " htap " in c and f"ch-{warehouses}w" in c:
                return f"`{c}`"
        return "n/a"
    return command


def _htap(warehouses):
    def value(records):
        j = _json(records, "htap").get(f"w{warehouses}")
        if not j or "tpcc_alone_tx_per_s" not in j:
            return None
        return (f"TPC-C {render.num(j['tpcc_alone_tx_per_s'])} -> "
                f"**{render.num(j['tpcc_with_queries_tx_per_s'])} tx/s** beside "
                f"**{render.num(j['queries_per_hour_with_tpcc'])} queries/h** "
                f"(alone: {render.num(j['queries_per_hour_alone'])} queries/h)")
    return value


class Headline:
    def __init__(self, label, tool, value, command=None, anchor=None):
        self.label = label
        self.tool = tool
        self.value = value  # records -> Markdown, or None when not measured
        self.command = command or (lambda records: _command(records, tool))
        self.anchor = anchor  # a sub-section's slug, else the tool's section


HEADLINE = [
    Headline("TPC-C, 1 worker, 1 warehouse, 10 users, async commit", "tpcc", *_tpcc("1wk-async")),
    Headline("TPC-C, 2 workers, 2 warehouses, 20 users, async commit", "tpcc",
             *_tpcc("2wk-async")),
    Headline("TPC-C, 1 worker, 1 warehouse, 10 users, durable commit", "tpcc",
             *_tpcc("1wk-durable")),
    Headline("TPC-C instructions per transaction, the mix, 1 worker (callgrind)", "tpcc-core",
             _mix_instructions),
    Headline("STEPS: L1-I misses of TPC-C Payment, 1 warehouse, 10 users (callgrind)", "icache",
             _payment),
    Headline("STEPS: L1-I misses of the paper's mix (no Delivery), 10 warehouses, 100 users",
             "icache", _paper_mix, anchor="against-the-steps-paper"),
    Headline("STEPS: wall clock of the TPC-C mix, 1 warehouse, 10 users", "steps-wall", _wall),
    Headline("B-tree: 1 worker, a transaction per operation", "btree", _btree),
    Headline("fiber direct switch (the CTX primitive)", "switch", _switch),
    Headline("durable commits with group commit", "log", _commits),
    Headline("TPC-C on the other embedded engines, 1 warehouse", "engines", _engines),
    Headline("YCSB on the other embedded engines, one operation per transaction", "ycsb",
             _ycsb),
    Headline("crash torture (SIGKILL and recover)", "crash-test", _crash),
    Headline("CH-benCHmark: the 22 queries on 1 thread, against SQLite", "query", _query),
    Headline("CH-benCHmark: the 22 queries on 2 threads", "query", _query_threads),
    Headline("radix-cluster join over the plain hash join", "radix-join", _radix),
    Headline("HTAP, 1 warehouse: TPC-C and one CH query stream", "htap", _htap(1),
             _htap_command(1)),
    Headline("HTAP, 10 warehouses: TPC-C and one CH query stream", "htap", _htap(10),
             _htap_command(10)),
]
