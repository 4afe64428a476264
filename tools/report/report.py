#!/usr/bin/env python3
"""tools/run report: runs the measuring tools and writes docs/results.md and the README's
headline table from their JSON (Python 3, standard library only).

    report.py [--quick | --full] [--only a,b] [--save-dir DIR] [--output FILE] [--readme FILE]
    report.py --from DIR [--only a,b] [--output FILE] [--readme FILE]

Owns the document: its header (machine, date, commit), one section per tool of tools.TOOLS
(rendered by render.py from the tool's saved record) and the block of README.md between
<!-- headline:begin --> and <!-- headline:end --> (tools.HEADLINE). Progress goes to stderr;
stdout carries one JSON line that sums up what ran.

The save directory (default <build>/report) holds:
  meta.json        the measuring run: machine, date, commit, mode, options, duration
  <tool>.json      a tool's record: its commands, exit status, final JSON line, duration,
                   the commit and mode it ran on (tools.py says what each record holds)
  <stem>.out/.err  each command's raw stdout and stderr
`--from DIR` renders from these files alone, so the document can be regenerated without
measuring again. A measuring run with --only replaces those tools' records and renders the
others from the records already in the save directory, each marked with its own commit and
date where they differ from the header's.

Invariants:
  1. Every figure in the output comes from a record's JSON (or, for the STEPS paper's
     figures, from render.PAPER, labelled as the paper's); nothing else is a figure.
  2. The README outside the markers is never changed; without both markers it is not written.
  3. A tool that failed is shown as failed, with its exit status; the report then exits 1.

Exit status: 0 all ran (or rendered); 1 a tool failed or its record is missing; 2 bad options.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (it would read as a change)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tools  # noqa: E402
from runner import MODES, Context, log, now_utc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- headline:begin -->"
END = "<!-- headline:end -->"


# ---- the machine and the tree -------------------------------------------------------------------

def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def cpu_model():
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def physical_cores():
    pairs = set()
    physical = core = None
    for line in read_text("/proc/cpuinfo").splitlines() + [""]:
        if line.startswith("physical id"):
            physical = line.split(":", 1)[1].strip()
        elif line.startswith("core id"):
            core = line.split(":", 1)[1].strip()
        elif not line.strip():
            if physical is not None and core is not None:
                pairs.add((physical, core))
            physical = core = None
    return len(pairs) or None


def memory_gib():
    m = re.search(r"^MemTotal:\s+(\d+) kB", read_text("/proc/meminfo"), re.M)
    return round(int(m.group(1)) / 2**20, 1) if m else None


def os_name():
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', read_text("/etc/os-release"), re.M)
    return m.group(1) if m else platform.system()


def cmake_cache(build_dir, name):
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", read_text(os.path.join(build_dir, "CMakeCache.txt")),
                  re.M)
    return m.group(1).strip() if m else None


def machine(build_dir):
    compiler = cmake_cache(build_dir, "CMAKE_CXX_COMPILER")
    return {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": physical_cores(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "kernel": platform.release(),
        "compiler": (first_line([compiler, "--version"]) if compiler else None) or "unknown",
        "build_type": cmake_cache(build_dir, "CMAKE_BUILD_TYPE") or "unknown",
        "valgrind": first_line(["valgrind", "--version"]) or "not installed",
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def git(*args):
    try:
        out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                             check=False)
    except OSError:
        return None
    return out.stdout if out.returncode == 0 else None


def tree_state(outputs):
    """The commit and the uncommitted changes, leaving out the files this script writes."""
    commit = (git("rev-parse", "HEAD") or "unknown").strip()
    ignore = {os.path.realpath(p) for p in outputs}
    changes = []
    for line in (git("status", "--porcelain") or "").splitlines():
        path = line[3:].split(" -> ")[-1].strip('"')
        if os.path.realpath(os.path.join(ROOT, path)) not in ignore:
            changes.append(line.strip())
    return {"commit": commit, "dirty": bool(changes), "changes": changes[:20]}


# ---- running ------------------------------------------------------------------------------------

def save_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def measure(selected, ctx, meta):
    """Runs the selected tools in list order, saving each record as it completes."""
    for index, tool in enumerate(selected, 1):
        log(f"{tool.name} ({index} of {len(selected)}), {ctx.mode} mode, started {now_utc()}")
        started = now_utc()
        start = time.monotonic()
        try:
            record = tool.run(ctx, tool.name)
        except Exception as e:  # a broken tool must not lose the others' records
            log(f"{tool.name}: {type(e).__name__}: {e}")
            record = {"commands": [], "json": None, "ok": False, "exit_status": None,
                      "error": f"{type(e).__name__}: {e}"}
        record.update(name=tool.name, title=tool.title, mode=ctx.mode, commit=meta["commit"],
                      dirty=meta["dirty"], started=started,
                      seconds=round(time.monotonic() - start, 1))
        assert "ok" in record and "commands" in record, tool.name
        save_json(os.path.join(ctx.save_dir, tool.name + ".json"), record)
        log(f"{tool.name}: {'done' if record['ok'] else 'FAILED'} in "
            f"{record['seconds']:.0f} s")


def load_records(directory):
    records = {}
    for tool in tools.TOOLS:
        record = load_json(os.path.join(directory, tool.name + ".json"))
        if isinstance(record, dict):
            records[tool.name] = record
    return records


# ---- the document -------------------------------------------------------------------------------

def slug(title):
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def minutes(seconds):
    if not isinstance(seconds, (int, float)):
        return "n/a"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


MODE_TEXT = {
    "quick": "quick (`--quick`: each tool's smoke configuration; not figures to quote)",
    "default": "default (`tools/run report`)",
    "full": "full (`tools/run report --full`: the long variants)",
}


def header(meta):
    m = meta.get("machine") or {}
    cores = f"{m.get('logical_cpus', 'n/a')} logical CPUs"
    if m.get("physical_cores"):
        cores += f" ({m['physical_cores']} cores)"
    load = m.get("load_average") or []
    commit = meta.get("commit", "unknown") + ("-dirty" if meta.get("dirty") else "")
    rows = [
        ("commit", f"`{commit}`"),
        ("measured", f"{meta.get('date', 'n/a')}, for {minutes(meta.get('seconds'))}"),
        ("mode", MODE_TEXT.get(meta.get("mode"), str(meta.get("mode")))),
        ("CPU", f"{m.get('cpu', 'n/a')}, {cores}"),
        ("memory", f"{m.get('memory_gib', 'n/a')} GiB"),
        ("system", f"{m.get('os', 'n/a')}, Linux {m.get('kernel', 'n/a')}"),
        ("compiler", f"{m.get('compiler', 'n/a')}, build type {m.get('build_type', 'n/a')}"),
        ("valgrind", m.get("valgrind", "n/a")),
        ("load average at the start", " / ".join(str(x) for x in load) or "n/a"),
    ]
    out = ["| | |", "|:---|:---|"] + [f"| {k} | {v} |" for k, v in rows]
    if meta.get("dirty"):
        out += ["", "> **Warning:** the tree had uncommitted changes when this was measured, so "
                "the commit above does not hold exactly the code measured:", ">"]
        out += [f"> `{c}`" for c in meta.get("changes", [])]
    return "\n".join(out)


def section(tool, record, meta, records):
    lines = [f"## {tool.title}", "", tool.about, ""]
    if record is None:
        return "\n".join(lines + ["Not measured: no saved record of this tool.", ""])
    differs = []
    if (record.get("commit"), bool(record.get("dirty"))) != (meta.get("commit"),
                                                              bool(meta.get("dirty"))):
        differs.append(f"commit `{record.get('commit')}{'-dirty' if record.get('dirty') else ''}`")
    if record.get("mode") != meta.get("mode"):
        differs.append(f"mode {record.get('mode')}")
    if differs:
        lines += [f"*Measured separately: {', '.join(differs)}, started {record.get('started')}.*",
                  ""]
    if record.get("ok") or record.get("partial"):
        lines += [tool.render(record, records), ""]
    if not record.get("ok"):
        error = f": {record['error']}" if record.get("error") else ""
        lines += [f"**The run failed** (exit status {record.get('exit_status', 'n/a')}{error}); "
                  f"its output is in the save directory, `{tool.name}*.out` and `*.err`.", ""]
    commands = record.get("commands") or []
    if commands:
        took = minutes(record.get("seconds"))
        lines += [f"Command{'s' if len(commands) > 1 else ''}, from the repository root "
                  f"({took} in all):", "", "```sh", *commands, "```", ""]
        if tool.name == "tpcc":
            lines += ["`data/report/tpcc-run` is a fresh copy of the loaded database "
                      "(`data/report/tpcc-<W>w`) for every run.", ""]
    return "\n".join(lines)


def document(meta, records, selected):
    out = ["# Results", "",
           "<!-- Generated by tools/report/report.py: do not edit; regenerate it. -->", "",
           "Generated by `tools/run report` from the JSON the project's measuring tools print; "
           "no figure here is typed by hand. `tools/run report` measures again and rewrites "
           "this file and the README's headline table; `tools/run report --from build/report` "
           "renders them again from the saved output without measuring. Under each table is "
           "the exact command that produced it.", "", header(meta), "", "Sections:", ""]
    out += [f"- [{t.title}](#{slug(t.title)})" for t in selected]
    out.append("")
    for tool in selected:
        out.append(section(tool, records.get(tool.name), meta, records))
    return "\n".join(out).rstrip() + "\n"


# ---- the README's headline ----------------------------------------------------------------------

def headline_block(meta, records, link):
    titles = {t.name: t.title for t in tools.TOOLS}
    rows = ["| figure | value | command | details |", "|:---|:---|:---|:---|"]
    for h in tools.HEADLINE:
        value = h.value(records) if h.tool in records else None
        anchor = h.anchor or slug(titles[h.tool])
        command = h.command(records) if value else "n/a"
        rows.append(f"| {h.label} | {value or 'not measured'} | {command} | "
                    f"[{titles[h.tool]}]({link}#{anchor}) |")
    m = meta.get("machine") or {}
    commit = meta.get("commit", "unknown")[:12] + ("-dirty" if meta.get("dirty") else "")
    apart = [t for t, r in records.items() if (r.get("commit"), bool(r.get("dirty"))) !=
             (meta.get("commit"), bool(meta.get("dirty")))]
    note = (f"Measured on commit `{commit}` on {meta.get('date', 'n/a')}: {m.get('cpu', 'n/a')}, "
            f"{m.get('logical_cpus', 'n/a')} logical CPUs"
            f"{' (' + ', '.join(sorted(apart)) + ' measured separately)' if apart else ''}. "
            f"Generated by `tools/run report`, which also writes "
            f"[{os.path.basename(link)}]({link}) with every figure, the machine and the exact "
            "commands.")
    generated = "<!-- Generated by tools/run report (tools/report/tools.py): do not edit. -->"
    return "\n".join([generated, "", *rows, "", note])


def update_readme(path, block):
    """Replaces the text between the markers; 'updated', 'unchanged' or why it was left alone."""
    text = read_text(path)
    begin = text.find(BEGIN)
    end = text.find(END, begin + len(BEGIN)) if begin >= 0 else -1
    if not text or begin < 0 or end < 0:
        log(f"warning: {path} has no {BEGIN} ... {END} markers: README left alone")
        return "left alone: no markers"
    new = text[:begin + len(BEGIN)] + "\n" + block + "\n" + text[end:]
    assert new.startswith(text[:begin]) and new.endswith(text[end:])  # invariant 2
    if new == text:
        return "unchanged"
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return "updated"


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/run report",
        description="Run the measuring tools; write docs/results.md and the README headline.")
    p.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="render saved records from DIR instead of measuring")
    p.add_argument("--only", metavar="A,B", help="these tools only: " + ",".join(tools.TOOL_NAMES))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="each tool's smoke configuration")
    mode.add_argument("--full", action="store_true", help="the long variants")
    p.add_argument("--build-dir", default=os.environ.get("SM_BUILD_DIR") or
                   os.path.join(ROOT, "build"), help="the build tree (default build/)")
    p.add_argument("--save-dir", help="where the outputs and records go (default BUILD/report)")
    p.add_argument("--output", default=os.path.join(ROOT, "docs", "results.md"),
                   help="the document (default docs/results.md)")
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                   help="the README whose headline block is rewritten (default README.md)")
    args = p.parse_args(argv)
    if args.from_dir and (args.quick or args.full or args.save_dir):
        p.error("--from renders saved records: --quick, --full and --save-dir do not apply")
    selected = tools.TOOLS
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in tools.TOOL_NAMES]
        if unknown or not names:
            p.error(f"--only takes {','.join(tools.TOOL_NAMES)}, not '{args.only}'")
        selected = [t for t in tools.TOOLS if t.name in names]
    return args, selected


def rendering_run(args, selected):
    """--from: the saved meta and records; nothing measured."""
    meta = load_json(os.path.join(args.from_dir, "meta.json"))
    if not isinstance(meta, dict):
        log(f"warning: no meta.json in {args.from_dir}: the header shows no machine")
        meta = {"commit": "unknown", "mode": "unknown", "date": "unknown"}
    records = load_records(args.from_dir)
    shown = selected if args.only else [t for t in tools.TOOLS if t.name in records]
    return meta, records, shown, {}


def measuring_run(args, selected, outputs):
    """Measures the selected tools; the header's meta, all saved records, what was measured."""
    start = time.monotonic()
    mode = "quick" if args.quick else "full" if args.full else "default"
    save_dir = os.path.abspath(args.save_dir or os.path.join(args.build_dir, "report"))
    os.makedirs(save_dir, exist_ok=True)
    meta = {"date": now_utc(), "mode": mode, "argv": args.argv, **tree_state(outputs),
            "machine": machine(args.build_dir)}
    measured = {"commit": meta["commit"], "dirty": meta["dirty"]}
    if meta["dirty"]:
        log("warning: the tree has uncommitted changes; the report says so")
    ctx = Context(ROOT, os.path.abspath(args.build_dir), save_dir, mode, meta["commit"])
    if not args.only:
        save_json(os.path.join(save_dir, "meta.json"), meta)
    measure(selected, ctx, meta)
    meta["seconds"] = round(time.monotonic() - start, 1)
    earlier = load_json(os.path.join(save_dir, "meta.json")) if args.only else None
    if isinstance(earlier, dict):
        meta = earlier  # the header describes the whole document: the full run's
    else:
        save_json(os.path.join(save_dir, "meta.json"), meta)
    records = load_records(save_dir)
    return meta, records, [t for t in tools.TOOLS if t.name in records], measured


def main(argv):
    args, selected = parse_args(argv)
    args.argv = argv
    start = time.monotonic()
    outputs = (os.path.abspath(args.output), os.path.abspath(args.readme))
    if args.from_dir:
        meta, records, shown, measured = rendering_run(args, selected)
    else:
        meta, records, shown, measured = measuring_run(args, selected, outputs)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(document(meta, records, shown))
    link = os.path.relpath(os.path.abspath(args.output),
                           os.path.dirname(os.path.abspath(args.readme)))
    readme = update_readme(args.readme, headline_block(meta, records, link))
    failed = [t.name for t in shown if not (records.get(t.name) or {}).get("ok")]
    summary = {
        "output": args.output, "readme": readme, "from": args.from_dir,
        "mode": meta.get("mode"), "commit": meta.get("commit"), "dirty": meta.get("dirty"),
        "measured": measured,  # this run's tree, when it measured
        "ran": [] if args.from_dir else [t.name for t in selected],
        "sections": [t.name for t in shown],
        "tools": {t.name: {"ok": (records.get(t.name) or {}).get("ok", False),
                           "seconds": (records.get(t.name) or {}).get("seconds")} for t in shown},
        "failed": failed, "seconds": round(time.monotonic() - start, 1),
    }
    log(f"wrote {args.output}; README {readme}; {len(failed)} failed")
    print(json.dumps(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
