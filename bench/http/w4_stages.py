#!/usr/bin/env python3
"""Where a W4 run's lateness comes from, stage by stage.

Reads the SQLite database that `stele_http_bench W4` leaves in its run
directory (STELE_BENCH_DIR=DIR STELE_BENCH_REPEAT=1 stele_http_bench W4,
then DIR/w4/data/stele.sqlite) and prints, for the 1,000 workflows, the
p50/p90/p99/max of each stage between the two steps that read t0 and t1
(BENCHMARKS.md, "Why W4 stays over 50 ms"):

  lateness          t1 - t0 - sleep, as the workflow returned it
  lock1_to_t0       first step locked -> it read t0 (not in the lateness)
  t0_to_fin1        t0 -> the first step's result committed
  fin1_to_sleepreq  that result -> the workflow's sleep request committed
  fire_late         the delay fired after its due time (sleep request + 2 s)
  fire_to_relock    fired -> the workflow locked again
  relock_to_child2  locked -> the second step created (and locked)
  child2_to_lock    second step created -> locked
  lock2_to_t1       second step locked -> it read t1

Times are the events' created_at (µs). Event rows are compressed with the
format-1 preset dictionary, read from src/storage/sqlite/event_codec.cc.

Usage: bench/http/w4_stages.py DB [SLEEP_MS]   (SLEEP_MS: W4_SLEEP_MS, 2000)
"""
import json
import os
import re
import sqlite3
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dictionary():
    with open(os.path.join(ROOT, "src/storage/sqlite/event_codec.cc")) as f:
        src = f.read()
    m = re.search(r'kEventDictionaryV1 =\s*((?:R"\(.*?\)"\s*)+);', src, re.S)
    return "".join(re.findall(r'R"\((.*?)\)"', m.group(1), re.S)).encode()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sleep_us = int(sys.argv[2] if len(sys.argv) > 2 else 2000) * 1000
    zdict = dictionary()
    db = sqlite3.connect(sys.argv[1])

    def decode(blob):
        if isinstance(blob, str):
            return json.loads(blob)
        d = zlib.decompressobj(wbits=-15, zdict=zdict)
        return json.loads(d.decompress(blob[1:]) + d.flush())

    def one(sql, *args):
        return db.execute(sql, args).fetchone()[0]

    def value(key):
        last = one("SELECT json_value FROM t_execution_log WHERE exec_key = ? "
                   "ORDER BY version DESC LIMIT 1", key)
        text = json.dumps(decode(last))
        m = re.search(r'"ok":\s*(-?\d+)', text)
        return int(m.group(1))

    def at(key, version):
        return one("SELECT created_at FROM t_execution_log WHERE exec_key = ? AND version = ?",
                   key, version)

    rows = db.execute(
        "SELECT w.exec_key, a1.exec_key, a2.exec_key FROM t_state w "
        "JOIN t_state a1 ON a1.execution_id = w.execution_id || '.o:1-now_1' "
        "JOIN t_state a2 ON a2.execution_id = w.execution_id || '.o:3-now_1' "
        "WHERE w.ffqn LIKE '%w4'").fetchall()
    if not rows:
        sys.exit("no W4 workflows in " + sys.argv[1])
    stages = {}
    for workflow, first, second in rows:
        t0, t1 = value(first), value(second)
        first_locked = at(first, 1)
        first_finished = one("SELECT MAX(created_at) FROM t_execution_log WHERE exec_key = ?",
                             first)
        second_created, second_locked = at(second, 0), at(second, 1)
        # The sleep request: the workflow's join-set request of a delay.
        sleep_request = one(
            "SELECT MIN(created_at) FROM t_execution_log WHERE exec_key = ? AND "
            "history_event_type = 'join_set_request' AND join_set_id LIKE '%sleep%'", workflow)
        if sleep_request is None:  # older builds: version 6 of the workflow
            sleep_request = at(workflow, 6)
        fired = one("SELECT created_at FROM t_join_set_response WHERE exec_key = ? AND idx = 1",
                    workflow)
        relocked = one("SELECT MIN(created_at) FROM t_execution_log WHERE exec_key = ? AND "
                       "version > 7 AND history_event_type IS NULL", workflow)
        for name, v in (("lateness", t1 - t0 - sleep_us), ("lock1_to_t0", t0 - first_locked),
                        ("t0_to_fin1", first_finished - t0),
                        ("fin1_to_sleepreq", sleep_request - first_finished),
                        ("fire_late", fired - sleep_request - sleep_us),
                        ("fire_to_relock", relocked - fired),
                        ("relock_to_child2", second_created - relocked),
                        ("child2_to_lock", second_locked - second_created),
                        ("lock2_to_t1", t1 - second_locked)):
            stages.setdefault(name, []).append(v)

    def pct(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(len(v) * p / 100))] / 1000

    print("%d workflows; stage ms        p50     p90     p99     max" % len(rows))
    for name, v in stages.items():
        print("%-18s %15.1f %7.1f %7.1f %7.1f" % (name, pct(v, 50), pct(v, 90), pct(v, 99),
                                                pct(v, 100)))


if __name__ == "__main__":
    main()
