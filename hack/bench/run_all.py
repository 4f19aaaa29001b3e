"""``make bench``: every benchmark in one run, then ``results.md`` and its plots.

Runs, one after the other (each is also runnable alone, see its docstring):

1. ``bench_sync.py``: initial sync, watch ingest, memory per cached object;
2. ``bench_apiserver.py``: streaming vs paged list on the embedded server,
   and kopf ``@kopf.index``;
3. ``bench_balancer.py``: the Balancer at scale, and the kopf version;
4. ``bench_informer.py``, ``bench_workqueue.py`` and any other
   ``hack/bench/bench_*.py``: their printed output goes into the report.

then ``report.py``. Full size by default (the lead's run on a quiet machine,
about 15-20 minutes on 2 cores); ``--quick`` runs everything at small sizes
(a smoke test: its figures are not the ones to publish) and writes to
``build/bench-quick/`` unless ``--out-dir`` says otherwise.

    .venv/bin/python hack/bench/run_all.py [--quick] [--only sync,apiserver,...] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# name -> (script, full-size args, quick args); JSON-writing benchmarks get --out.
JSON_BENCHES = {
    "sync": ("bench_sync.py", [], ["--quick"]),
    "apiserver": ("bench_apiserver.py", [], ["--quick"]),
    "balancer": ("bench_balancer.py", [], ["--quick"]),
}
TEXT_BENCHES = {
    "informer": (
        "bench_informer.py",
        ["--rounds", "9"],
        ["--objects", "2000", "--events", "4000", "--rounds", "3"],
    ),
    # 100,000 items, best of 3: the ratios are steady from about 50,000 items
    "workqueue": (
        "bench_workqueue.py",
        ["--items", "100000"],
        ["--items", "20000", "--repeat", "1"],
    ),
}


def run(cmd: list[str], log: Path | None) -> tuple[int, float]:
    """Run ``cmd``, echoing its output (and saving it to ``log``); (exit code, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    rc = proc.wait()
    if log is not None:
        log.write_text("".join(lines))
    return rc, time.monotonic() - t0


README_BEGIN = "<!-- bench-results:begin -->"
README_END = "<!-- bench-results:end -->"


def update_readme(results: Path, elapsed: float) -> None:
    """Copy the targets table of ``results`` into README.md between the markers.

    Only a full run does this, and only where README.md has both markers (the
    section it replaces is the generated one; nothing else is touched).
    """
    readme = ROOT / "README.md"
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text or not results.exists():
        print(f"README.md: no {README_BEGIN} ... {README_END} markers: table not copied")
        return
    lines = results.read_text().splitlines()
    start = lines.index("## Targets (issue 12)") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    table = "\n".join(line for line in lines[start:end] if not line.startswith("![")).strip()
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    stamp = time.strftime("%Y-%m-%d")
    body = (
        f"\n{table}\n\n(from `bench/results.md`, written by `make bench` in"
        f" {elapsed / 60:.0f} min on {os.cpu_count()} cores, {stamp})\n"
    )
    readme.write_text(head + README_BEGIN + body + README_END + tail)
    print("README.md: targets table updated")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round (smoke test)")
    parser.add_argument(
        "--only",
        help="comma-separated subset of: " + ",".join([*JSON_BENCHES, *TEXT_BENCHES, "others"]),
    )
    parser.add_argument("--out-dir", help="default bench/ (quick: build/bench-quick/)")
    args = parser.parse_args()
    out_dir = Path(args.out_dir or (ROOT / ("build/bench-quick" if args.quick else "bench")))
    out_dir.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    py = sys.executable
    t_start = time.monotonic()
    timings: list[tuple[str, float, int]] = []
    failed = False
    for name, (script, full, quick) in JSON_BENCHES.items():
        if only is not None and name not in only:
            continue
        print(f"\n######## {script}", flush=True)
        cmd = [
            py,
            str(HERE / script),
            *(quick if args.quick else full),
            "--out",
            str(out_dir / f"{name}.json"),
        ]
        rc, secs = run(cmd, None)
        timings.append((script, secs, rc))
        failed |= rc != 0
    others = sorted(
        p.name
        for p in HERE.glob("bench_*.py")
        if p.name not in {s for s, _, _ in JSON_BENCHES.values()}
        and p.name not in {s for s, _, _ in TEXT_BENCHES.values()}
    )
    text = dict(TEXT_BENCHES)
    for script in others:  # other engineers' benchmarks: their defaults (skipped when quick)
        text[script.removesuffix(".py").removeprefix("bench_")] = (script, [], [])
    for name, (script, full, quick) in text.items():
        if (
            only is not None
            and name not in only
            and not (name not in TEXT_BENCHES and "others" in only)
        ):
            continue
        if args.quick and name not in TEXT_BENCHES:
            print(f"\n######## {script}: skipped in quick mode (run it alone)", flush=True)
            continue
        print(f"\n######## {script}", flush=True)
        rc, secs = run(
            [py, str(HERE / script), *(quick if args.quick else full)], out_dir / f"{name}.txt"
        )
        timings.append((script, secs, rc))
        failed |= rc != 0
    note = (
        "QUICK MODE (small sizes, 1 round): a smoke test, not figures to publish."
        if args.quick
        else ""
    )
    run([py, str(HERE / "report.py"), "--dir", str(out_dir), "--note", note], None)
    if not args.quick and only is None:
        update_readme(out_dir / "results.md", time.monotonic() - t_start)
    print("\n######## time per benchmark")
    for script, secs, rc in timings:
        print(f"  {script:<28} {secs:7.0f} s{'' if rc == 0 else f'  (exit {rc})'}")
    print(f"  {'total':<28} {time.monotonic() - t_start:7.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
