"""Running the measuring tools: one command at a time, its output saved, its JSON line kept.

Owns the run context (repository root, build directory, save directory, mode) and the one
function that runs a command: stdout to <save-dir>/<stem>.out, stderr to <stem>.err, and the
last non-empty stdout line parsed as the tool's JSON object (every tool of the project ends its
stdout with one). Commands run from the repository root with paths relative to it, so the
command recorded is the command a reader can paste.

Invariants:
  1. A result's `json` is a dict parsed from the last non-empty stdout line, or None; nothing
     else (no earlier line, no stderr) is ever taken for a tool's figures.
  2. `ok` is true only for exit status 0 with a JSON object.
"""

import datetime
import os
import shlex
import subprocess
import sys
import time

MODES = ("quick", "default", "full")


def log(message):
    """A progress line on stderr (stdout carries only the closing JSON line)."""
    print(f"[report] {message}", file=sys.stderr, flush=True)


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


class Context:
    """What every tool's runner needs. Not shared between threads."""

    def __init__(self, root, build_dir, save_dir, mode, commit):
        assert mode in MODES, mode
        assert os.path.isabs(root), root
        self.root = root
        self.build_dir = build_dir
        self.save_dir = save_dir
        self.mode = mode
        self.commit = commit
        self.env = dict(os.environ)
        default_build = os.path.join(root, "build")
        # tools/run builds into SM_BUILD_DIR; a non-default one is part of the recorded command.
        self.env_prefix = ""
        if os.path.realpath(build_dir) != os.path.realpath(default_build):
            self.env["SM_BUILD_DIR"] = build_dir
            self.env_prefix = f"SM_BUILD_DIR={shlex.quote(self.rel(build_dir))} "
        else:
            self.env.pop("SM_BUILD_DIR", None)

    def rel(self, path):
        """`path` relative to the repository root when it lies under it, else absolute."""
        path = os.path.abspath(path)
        inside = os.path.commonpath([path, self.root]) == self.root
        return os.path.relpath(path, self.root) if inside else path

    def build_path(self, *parts):
        return self.rel(os.path.join(self.build_dir, *parts))

    def tools_run(self, *args):
        """argv of `tools/run ARGS...`."""
        return ["tools/run", *args]

    def display(self, argv):
        """The command as recorded in the document."""
        shown = shlex.join(argv)
        return self.env_prefix + shown if argv and argv[0] == "tools/run" else shown


def last_json_line(path):
    """The last non-empty line of the file parsed as a JSON object, or None (invariant 1)."""
    import json

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    if not lines:
        return None
    try:
        value = json.loads(lines[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def tail(path, count=5):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line.rstrip("\n") for line in f][-count:]
    except OSError:
        return []


def run_command(ctx, argv, stem):
    """Runs argv from the repository root; returns a result dict (see invariants)."""
    assert argv, "empty command"
    out_path = os.path.join(ctx.save_dir, stem + ".out")
    err_path = os.path.join(ctx.save_dir, stem + ".err")
    shown = ctx.display(argv)
    log(f"  $ {shown}")
    start = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        try:
            status = subprocess.run(argv, cwd=ctx.root, stdout=out, stderr=err,
                                    env=ctx.env, check=False).returncode
        except OSError as e:
            err.write(f"cannot run {argv[0]}: {e}\n")
            status = 127
    seconds = time.monotonic() - start
    figures = last_json_line(out_path)
    ok = status == 0 and figures is not None
    if not ok:
        log(f"  FAILED: exit status {status}{'' if figures else ', no JSON line'}; "
            f"see {ctx.rel(out_path)} and {ctx.rel(err_path)}")
        for line in tail(err_path) or tail(out_path):
            log(f"    | {line}")
    result = {"command": shown, "exit_status": status, "seconds": round(seconds, 1),
              "json": figures, "ok": ok, "stdout": os.path.basename(out_path),
              "stderr": os.path.basename(err_path)}
    assert not ok or isinstance(result["json"], dict)
    return result
