#!/usr/bin/env python3
"""Rows for scripts/bench_copy_file.sh as CSV on stdout: the table and value mix of
scripts/bench_copy.py (id, name, born, score, ok), seeded, so every run copies the same file."""
import datetime
import random
import sys

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
rng = random.Random(1)
epoch = datetime.date(1950, 1, 1)
out = sys.stdout
for i in range(rows):
    born = epoch + datetime.timedelta(days=rng.randint(0, 25_000))
    score = rng.randint(0, 10**8) / 100
    out.write(f"{i},name-{i % 9973}-{rng.randint(0, 10**6)},{born},{score:.2f},{'t' if i % 2 else 'f'}\n")
