#!/usr/bin/env python3
"""Small statements, tarn against PostgreSQL 15 side by side (issue 17's benchmark driver).

    scripts/bench.sh [--quick] [--rows N] [--only a,b] [--bin PATH] [--write-docs]

(bench.sh builds the release binary and the venv, then runs this.) Starts tarn over a fresh
temporary warehouse and a throwaway PostgreSQL 15 (scripts/pg15.sh), both on loopback with
their default durability and no benchmark-only settings, loads the same data into both through
the same client (psycopg, pgbench), runs each workload on tarn then on PostgreSQL, and prints
tarn's figure, PostgreSQL's, the ratio, the target ratio of issue 17 and tarn's peak RSS. The
workload names are stable: later runs are compared by them. An error of a workload (a statement
tarn refuses) is recorded for that workload and the run goes on.

Writes the results as JSON (`target/bench/small-<time>.json` or `--out`); with `--write-docs`,
the chart to docs/benchmarks/small-statements.svg and the table into docs/BENCHMARKS.md
between its markers (scripts/bench_report.py). Figures are printed, never asserted.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import bench_report
from bench_workloads import WORKLOADS, Side, flush_lag, max_sorted_runs

REPO = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rss:
    """tarn's peak resident set (VmHWM) over a phase: reset through /proc/PID/clear_refs ("5"
    resets the peak; needs the right to write it, e.g. root or the process owner on most
    kernels). When it cannot be reset, the figure is the peak since start (`cumulative`)."""

    def __init__(self, pid):
        self.pid, self.cumulative, self.overall = pid, False, 0.0

    def reset(self):
        self.peak_mib()  # the peak so far (a setup's) still counts for the whole run
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            self.cumulative = True

    def peak_mib(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                kb = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return None
        self.overall = max(self.overall, kb / 1024)
        return kb / 1024


# -- the servers --

def start_tarn(binary, workdir, extra=()):
    """tarn over a fresh warehouse on a free loopback port (with the `extra` server flags,
    e.g. --commit-log DIR); its log goes to workdir/tarn.log."""
    port = free_port()
    log = open(workdir / "tarn.log", "w")
    proc = subprocess.Popen(
        [binary, "--warehouse", str(workdir / "warehouse"), "--listen", f"127.0.0.1:{port}",
         *extra],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tarn exited with {proc.returncode}: "
                               + (workdir / "tarn.log").read_text()[-2000:])
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("tarn did not accept connections within 60 s")


def stop_tarn(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pg15_script():
    """The repository's scripts/pg15.sh (PG15_SCRIPT overrides it)."""
    return os.environ.get("PG15_SCRIPT") or str(REPO / "scripts" / "pg15.sh")


def machine():
    info = {"nproc": os.cpu_count(), "cpu": "?", "memory_gib": None,
            "loadavg_start": os.getloadavg()[0]}
    try:
        info["cpu"] = next(l.split(":", 1)[1].strip()
                           for l in open("/proc/cpuinfo") if l.startswith("model name"))
        kb = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
        info["memory_gib"] = round(kb / 1024 / 1024, 1)
    except (OSError, StopIteration):
        pass
    return info


def commit():
    def git(*a):
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True,
                              text=True).stdout.strip()
    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    return rev + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def config(args):
    quick = args.quick
    return argparse.Namespace(
        rows=args.rows or (20_000 if quick else 1_000_000),
        seconds=args.seconds or (3 if quick else 20),
        txn_rows=500 if quick else 5_000,
        bulk_preload=10_000 if quick else 100_000,
        bulk_statements=3 if quick else 10,
        multi_statements=5 if quick else 50,
    )


def run_workload(entry, side, setup, run, cfg, rss=None):
    """Setup then the timed run of one workload on one side; an error is recorded, not raised."""
    result = {"value": None, "error": None, "detail": {}}
    try:
        if setup:
            setup(side, cfg)
    except Exception as e:  # a refused statement must not end the whole run
        result["error"] = f"setup: {type(e).__name__}: {e}"
    if not result["error"]:
        if rss:
            rss.reset()
        try:
            result["value"], result["detail"] = run(side, cfg)
        except Exception as e:
            result["error"] = f"{type(e).__name__}: {e}"
    entry[side.name] = result
    shown = (" ".join(result["error"].split()) if result["error"]
             else f"{bench_report.figure(result['value'])} {entry['unit']}")
    print(f"  {entry['name']:<24} {side.name:<5} {shown}", flush=True)


def benchmark(args, tarn, pg, rss, cfg):
    names = [w[0] for w in WORKLOADS]
    only = args.only.split(",") if args.only else names
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; known: {', '.join(names)}")
    results = []
    for name, unit, target, setup, run, table in WORKLOADS:
        if name not in only:
            continue
        entry = {"name": name, "unit": unit, "target": target}
        run_workload(entry, tarn, setup, run, cfg, rss)
        entry["tarn_peak_rss_mib"] = rss.peak_mib()
        entry["rss_cumulative"] = rss.cumulative
        entry["max_sorted_runs"] = None
        try:
            entry["max_sorted_runs"] = max_sorted_runs(tarn, table) if table else None
        except Exception as e:
            entry["sorted_runs_error"] = str(e)
        entry["flush_lag"] = flush_lag(tarn)
        runs = entry["max_sorted_runs"]
        lag = "n/a" if entry["flush_lag"] is None else f"{entry['flush_lag']:.2f} s"
        print(f"  {'':<24} tarn  end of run: max sorted runs {'—' if runs is None else runs}, "
              f"flush lag {lag}, peak RSS "
              f"{bench_report.figure(entry['tarn_peak_rss_mib'])} MiB", flush=True)
        run_workload(entry, pg, setup, run, cfg)
        results.append(entry)
    return results


def write_outputs(doc, args):
    if not args.from_results:
        out = Path(args.out) if args.out else (
            REPO / "target" / "bench" / f"small-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nresults: {out}")
    if not args.write_docs:
        return
    svg = REPO / "docs" / "benchmarks" / "small-statements.svg"
    svg.parent.mkdir(parents=True, exist_ok=True)
    svg.write_text(bench_report.svg_chart(doc))
    docs = REPO / "docs" / "BENCHMARKS.md"
    generated = bench_report.docs_block(doc, "benchmarks/small-statements.svg")
    docs.write_text(bench_report.replace_generated(docs.read_text(), generated))
    print(f"wrote {svg.relative_to(REPO)} and the table in docs/BENCHMARKS.md")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", help="the tarn binary (required unless --from)")
    p.add_argument("--quick", action="store_true", help="a smoke run: small data, 3 s runs")
    p.add_argument("--rows", type=int, help="rows of bench_kv (default 1M; --quick 20k)")
    p.add_argument("--seconds", type=int, help="length of each pgbench run (default 20; --quick 3)")
    p.add_argument("--only", help="comma-separated workload names")
    p.add_argument("--out", help="the JSON results file")
    p.add_argument("--build", help="the build's label in the outputs (default: from the path)")
    p.add_argument("--no-commit-log", action="store_true",
                   help="run tarn with --commit-log off (every commit its own snapshot; the "
                        "commit log is on by default, so the outputs say so)")
    p.add_argument("--write-docs", action="store_true",
                   help="write docs/benchmarks/small-statements.svg and the table in docs/BENCHMARKS.md")
    p.add_argument("--from", dest="from_results", metavar="FILE",
                   help="print and write (--write-docs) the outputs of an earlier results file "
                        "instead of running")
    args = p.parse_args()
    if args.from_results:
        doc = json.loads(Path(args.from_results).read_text())
        print(bench_report.text_table(doc))
        return write_outputs(doc, args)
    if not args.bin:
        p.error("--bin is required")
    cfg = config(args)
    build = args.build or ("release" if "/release/" in args.bin else
                           "dev (unoptimized)" if "/debug/" in args.bin else "unlabelled")

    def interrupted(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)

    workdir = Path(tempfile.mkdtemp(prefix="tarn-bench-"))
    pg_dir = tempfile.mkdtemp(prefix="tarn-bench-pg15.", dir="/tmp")
    os.chmod(pg_dir, 0o755)
    pg_port = free_port()
    proc = None
    pg_started = False
    try:
        metrics_port = free_port()
        extra = ["--metrics-listen", f"127.0.0.1:{metrics_port}"]
        if args.no_commit_log:
            extra += ["--commit-log", "off"]
            build += ", --commit-log off"
        proc, tarn_port = start_tarn(args.bin, workdir, extra)
        pg_started = True  # stopped in any case: an interrupted start may still come up
        subprocess.run([pg15_script(), "start", str(pg_port), pg_dir], check=True)
        tarn = Side("tarn", tarn_port, "bench", "tarn", proc.pid, metrics_port)
        pg = Side("pg15", pg_port, "postgres", "postgres")
        doc = {"started": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "commit": commit(),
               "build": build, "binary": args.bin, "machine": machine(),
               "command": os.environ.get("TARN_BENCH_COMMAND", "scripts/bench_small.py "
                                         + " ".join(sys.argv[1:])),
               "config": {"quick": args.quick, **vars(cfg)}}
        print(f"tarn ({build}) pid {proc.pid} on 127.0.0.1:{tarn_port}, warehouse "
              f"{workdir / 'warehouse'}; PostgreSQL 15 on 127.0.0.1:{pg_port}\n", flush=True)
        rss = Rss(proc.pid)
        doc["workloads"] = benchmark(args, tarn, pg, rss, cfg)
        doc["tarn_peak_rss_mib_overall"] = rss.overall
        doc["machine"]["loadavg_end"] = os.getloadavg()[0]
        doc["subtitle"] = (f"{doc['started']}, commit {doc['commit']}, tarn {build} build"
                           + (", --quick" if args.quick else ""))
        if rss.cumulative:
            print("note: peak RSS could not be reset between workloads: figures are cumulative")
        print("\n" + bench_report.text_table(doc))
        print(f"\ntarn peak RSS over the whole run: {rss.overall:,.0f} MiB")
        write_outputs(doc, args)
    finally:
        if proc:
            stop_tarn(proc)
        if pg_started:
            subprocess.run([pg15_script(), "stop", str(pg_port), pg_dir])
        subprocess.run(["rm", "-rf", pg_dir, str(workdir)])


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted: tarn and PostgreSQL stopped, their folders removed")
