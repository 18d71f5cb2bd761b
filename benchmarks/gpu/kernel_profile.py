#!/usr/bin/env python3
"""Sum Nsight Compute's per-kernel durations (kernel_profile.sh's CSV) by kernel name.

usage: kernel_profile.py NCU_CSV   (ncu --csv --print-units base --metrics gpu__time_duration.sum)
Prints one row per kernel name, largest total first: share of the summed GPU time, calls, total
and mean in microseconds.
"""
import csv
import sys
from collections import defaultdict

total = defaultdict(float)
calls = defaultdict(int)
with open(sys.argv[1], newline="") as f:
    # ncu writes its own progress lines (==PROF==) before the CSV header.
    rows = csv.reader(line for line in f if line.startswith('"'))
    header = next(rows, None)
    if header is None:
        sys.exit("kernel_profile.py: no CSV rows in %s" % sys.argv[1])
    name_col, metric_col, value_col = (header.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value"))
    for row in rows:
        if row[metric_col] != "gpu__time_duration.sum":
            continue
        name = row[name_col].split("(")[0]
        total[name] += float(row[value_col].replace(",", "")) / 1e3  # ns -> us
        calls[name] += 1
grand = sum(total.values())
print("%d kernels, %.1f us of GPU time in all" % (sum(calls.values()), grand))
print("%6s %7s %11s %10s  %s" % ("share", "calls", "total_us", "mean_us", "kernel"))
for name, us in sorted(total.items(), key=lambda kv: -kv[1]):
    print("%5.1f%% %7d %11.1f %10.2f  %s" % (100 * us / grand, calls[name], us, us / calls[name], name[:110]))
