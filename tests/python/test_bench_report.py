"""The small-statements benchmark's report (scripts/bench_report.py): its table, chart and the
generated part of docs/BENCHMARKS.md, from a hand-made result document. No server, no timing:
the benchmark itself is too slow and noisy for the suite, this keeps what it writes from
rotting."""

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import bench_report  # noqa: E402


def side(value=None, error=None, slices=None):
    return {"value": value, "error": error, "detail": {"slices": slices} if slices else {}}


DOC = {
    "subtitle": "a test <run> & more",
    "workloads": [
        {"name": "point_lookup", "unit": "queries/s", "target": 0.5, "tarn": side(103.0),
         "pg15": side(46920.0), "tarn_peak_rss_mib": 512.4, "max_sorted_runs": 20,
         "flush_lag": None},
        {"name": "insert_in_txn", "unit": "rows/s", "target": 1.0,
         "tarn": side(7000.0, slices=[{"first": 1, "last": 200, "rate": 910.0},
                                      {"first": 201, "last": 800, "rate": 319.5}]),
         "pg15": side(3500.0), "tarn_peak_rss_mib": None, "max_sorted_runs": None,
         "flush_lag": None},
        {"name": "upsert_in_txn", "unit": "rows/s", "target": 1.0,
         "tarn": side(error="DbError: a | b\n  not supported"), "pg15": side(6500.0),
         "tarn_peak_rss_mib": 100.0, "max_sorted_runs": 1, "flush_lag": None},
    ],
}


def test_ratio_is_tarn_over_postgres_and_absent_on_error():
    ratios = [bench_report.ratio(w) for w in DOC["workloads"]]
    assert abs(ratios[0] - 103 / 46920) < 1e-12
    assert ratios[1] == 2.0
    assert ratios[2] is None


def test_table_rows_show_figures_ratio_target_and_errors():
    header, lookup, txn, upsert = bench_report.rows(DOC)
    assert header[:6] == ["workload", "tarn", "PostgreSQL 15", "unit", "tarn ÷ PG", "target"]
    assert lookup == ["point_lookup", "103", "46,920", "queries/s", "0.0022×", "≥ 0.5×",
                      "512 MiB", "20", "n/a"]
    assert txn[4] == "2×" and txn[6] == "—"
    assert upsert[1] == "error: DbError: a | b not supported" and upsert[4] == "—"


def test_markdown_escapes_pipes_and_lists_slices():
    md = bench_report.markdown_table(DOC)
    lines = md.splitlines()
    assert lines[1] == "|" + "---|" * 9
    assert "error: DbError: a \\| b not supported" in md
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 10 for line in lines[2:5])  # 9 cells
    assert "- `insert_in_txn`, tarn, rows/s by slice of the transaction: 1–200: 910/s, " \
           "201–800: 320/s" in md


def test_svg_is_well_formed_with_a_bar_per_ratio_and_a_tick_per_target():
    root = ET.fromstring(bench_report.svg_chart(DOC))
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in root.iter(ns + "rect") if r.get("fill") != "white"]
    assert len(bars) == 2  # the errored workload has no bar
    ticks = [ln for ln in root.iter(ns + "line") if ln.get("stroke") == "#1f3a93"]
    assert len(ticks) == 3 + 1  # one per workload, one in the legend
    one = next(ln for ln in root.iter(ns + "line") if ln.get("stroke") == "#333")
    # insert_in_txn's target is 1×: its tick stands on the 1× line; its bar (2×) goes past it.
    assert ticks[1].get("x1") == one.get("x1")
    assert float(bars[1].get("x")) + float(bars[1].get("width")) > float(one.get("x1"))
    # point_lookup (0.0022×) ends left of its target 0.5×.
    assert float(bars[0].get("x")) + float(bars[0].get("width")) < float(ticks[0].get("x1"))
    texts = "".join(t.text or "" for t in root.iter(ns + "text"))
    assert "a test <run> & more" in texts and "no ratio (error)" in texts


def test_generated_block_replaced_between_markers_and_appended_once():
    doc = "# Benchmarks\n\nintro\n"
    once = bench_report.replace_generated(doc, "table one")
    assert once.startswith(doc.rstrip()) and "table one" in once
    twice = bench_report.replace_generated(once + "\n## later section\n", "table two")
    assert "table one" not in twice and "table two" in twice
    assert twice.count(bench_report.BEGIN) == 1 and twice.endswith("## later section\n")


def test_docs_block_says_what_was_run_and_flags_smoke_runs():
    doc = dict(DOC, started="2026-12-06 21:51 UTC", commit="abc1234", build="dev (unoptimized)",
               command="scripts/bench.sh --quick",
               machine={"nproc": 2, "cpu": "AMD EPYC", "memory_gib": 23.5, "loadavg_start": 1.0,
                        "loadavg_end": 2.0},
               config={"quick": True, "rows": 20000, "seconds": 3})
    block = bench_report.docs_block(doc, "benchmarks/x.svg")
    assert "commit abc1234, tarn **dev (unoptimized)** build, 20,000 rows" in block
    assert "2 × AMD EPYC, 23.5 GiB" in block and "`scripts/bench.sh --quick`" in block
    assert "Not a measurement" in block and block.endswith("![tarn ÷ PostgreSQL 15](benchmarks/x.svg)\n")
    assert bench_report.markdown_table(doc) in block
    release = dict(doc, build="release", config=dict(doc["config"], quick=False))
    assert "Not a measurement" not in bench_report.docs_block(release, "x.svg")
