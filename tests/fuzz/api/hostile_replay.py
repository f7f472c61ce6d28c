#!/usr/bin/env python3
"""Hostile HTTP traffic against a real `stele server run`, and its memory.

Starts the given `stele` binary on 127.0.0.1 (port 0, a temp SQLite file,
an exec activity whose executions are all scheduled far ahead, so that the
server is idle once the traffic stops, a stub activity)
and sends it rounds of hostile requests from `--concurrency` client
threads: the API fuzz corpus (tests/fuzz/api/corpus) as is and mutated,
random methods and paths, bodies of invalid JSON, invalid UTF-8 and deep
nesting, bodies near `max_body_bytes`, many and huge headers, long URIs,
slow connections that trickle a request head, and some valid submissions
and reads. After every round, and again after `--idle` seconds without
traffic, it prints the server's memory: VmRSS and its split by mapping
(main heap, malloc arenas of other threads, thread stacks, other
anonymous memory, files) from /proc/PID/smaps, and the thread count.
All figures in MiB: `rss` is VmRSS, `anon` its anonymous part (RssAnon:
what the process allocated); `files` is mostly the SQLite database, which
the server maps (mmap_size) and which grows with the valid submissions —
page cache the kernel reclaims under pressure, not allocations.

A leak grows with every round; retention grows to a plateau set by the
concurrency and stays there. docs/reliability.md ("Memory under hostile
traffic") has the figures and the commands.

usage: tests/fuzz/api/hostile_replay.py --binary build/rel/src/cli/stele
           [--requests 30000] [--rounds 6] [--concurrency 64] [--idle 10]
           [--seed 1] [--env NAME=VALUE ...] [--keep]
Exit status 0 when the server answered /healthz at the end and exited
cleanly on SIGTERM; 1 otherwise.
"""

import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
ECHO = "replay:test/exec.echo"
TOKEN = "x"  # the corpus sends `Authorization: Bearer x`

CONFIG = """data_dir = "{dir}/data"

[api]
listen = "127.0.0.1:0"
token = "{token}"

[database]
sqlite = "{dir}/stele.sqlite"

[[activity_exec]]
name = "echo"
command = ["/bin/true"]

[[activity_exec.functions]]
ffqn = "{echo}"
params = [{{ name = "x", type = "string" }}]
return_type = "result<string, string>"

[[activity_stub]]
name = "approvals"
[[activity_stub.functions]]
ffqn = "replay:test/stub.approve"
params = []
return_type = "result<bool, string>"
"""

# ---- memory ---------------------------------------------------------------

HEAP_MAX = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: a non-main arena's heap


def memory(pid):
    """VmRSS and its split by mapping kind, in KiB; the thread count."""
    maps = []
    with open(f"/proc/{pid}/smaps") as f:
        current = None
        for line in f:
            head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if head:
                current = {"start": int(head.group(1), 16), "end": int(head.group(2), 16),
                           "perms": head.group(3), "path": head.group(4).strip(), "rss": 0}
                maps.append(current)
            elif line.startswith("Rss:") and current is not None:
                current["rss"] = int(line.split()[1])
    split = {"heap": 0, "arenas": 0, "stacks": 0, "other": 0, "files": 0}
    for i, m in enumerate(maps):
        if m["rss"] == 0:
            continue
        prev = maps[i - 1] if i > 0 else None
        nxt = maps[i + 1] if i + 1 < len(maps) else None
        anon = m["path"] == ""
        if m["path"] in ("[heap]",):
            split["heap"] += m["rss"]
        elif anon and m["start"] % HEAP_MAX == 0 and m["end"] - m["start"] <= HEAP_MAX and (
                m["end"] - m["start"] == HEAP_MAX or
                (nxt and nxt["start"] == m["end"] and nxt["perms"].startswith("---"))):
            split["arenas"] += m["rss"]  # a malloc heap: 64 MiB aligned, tail reserved
        elif anon and prev and prev["end"] == m["start"] and prev["path"] == "" and \
                prev["perms"].startswith("---") and prev["end"] - prev["start"] <= (64 << 10):
            split["stacks"] += m["rss"]  # a thread stack above its guard page
        elif anon or m["path"].startswith("["):
            split["other"] += m["rss"]
        else:
            split["files"] += m["rss"]
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    rss_anon = int(re.search(r"RssAnon:\s+(\d+)", status).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    return rss, rss_anon, split, threads


def report(label, pid):
    rss, rss_anon, split, threads = memory(pid)
    parts = " ".join(f"{k}={v // 1024}" for k, v in split.items())
    print(f"{label:<18} rss={rss // 1024:<5} anon={rss_anon // 1024:<5} | {parts} threads={threads}",
          flush=True)
    return rss


# ---- hostile requests -------------------------------------------------------

METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "CONNECT", "PRI",
           "get", "G\x00T", "\xff\xfe", "POSTPOSTPOST", ""]
PATHS = ["/", "/healthz", "/metrics", "/v1/executions", "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV",
         "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV/result?timeout=1",
         "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV/events", "/v1/components", "/ui/",
         "/v1/executions/E_%ff%fe/cancel", "/v1/delays/Delay_x/cancel", "/%00", "*", "//..//.."]


def corpus():
    items = []
    for name in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, name), "rb") as f:
            items.append(f.read())
    return items


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        if op == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1 and data:
            del data[rng.randrange(len(data)):]
        elif op == 2:
            at = rng.randrange(len(data) + 1)
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = data[:rng.randint(0, 512)]
    return bytes(data)


def request(method, path, body=b"", headers=(), length=True):
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode("latin-1", "replace") + b"\r\n" + body


def nested(rng):
    depth = rng.choice([100, 1000, 10000, 100000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    return b'{"ffqn": "' + ECHO.encode() + b'", "params": [' + opener * depth + closer * depth + b"]}"


def hostile(rng, seeds):
    """One connection's bytes: a list of (bytes, pause_seconds) to send."""
    kind = rng.randrange(12)
    if kind == 0:
        return [(rng.choice(seeds), 0)]
    if kind == 1:
        return [(mutate(rng, rng.choice(seeds)), 0)]
    if kind == 2:
        method = rng.choice(METHODS)
        path = rng.choice(PATHS) + "".join(rng.choice("ab%/?&=.:_\u00e9") for _ in range(rng.randint(0, 40)))
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        return [(request(method, path, body, length=rng.random() < 0.7), 0)]
    if kind == 3:  # invalid JSON and invalid UTF-8
        body = rng.choice([b"{", b'{"ffqn": "\xff\xfe"}', b'{"ffqn": "' + ECHO.encode() + b'", "params": ["\xc3\x28"]}',
                           b"[" * 5000, b'{"a":' * 3000, b"\x00" * 1000, b'{"ffqn": 1e99999}',
                           b'"\\ud800"', bytes(rng.randrange(256) for _ in range(4000))])
        return [(request(rng.choice(["POST", "PUT"]), rng.choice(["/v1/executions",
                 "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV/stub"]), body), 0)]
    if kind == 4:
        return [(request("POST", "/v1/executions", nested(rng)), 0)]
    if kind == 5:  # a body near (or over) max_body_bytes; stored, run far ahead
        size = rng.choice([200_000, 900_000, 1_040_000, 1_100_000])
        body = (b'{"ffqn": "' + ECHO.encode() + b'", "scheduled_at": "2999-01-01T00:00:00Z", '
                b'"params": ["' + b"x" * size + b'"]}')
        return [(request("POST", "/v1/executions", body), 0)]
    if kind == 6:  # many and huge headers
        headers = rng.choice([[(f"X-H{i}", "h" * 600) for i in range(90)],
                              [(f"X-H{i}", "v") for i in range(101)],
                              [(f"X-H{i}", "h" * 4000) for i in range(20)],
                              [("X-Big", "h" * 9000)],
                              [("X-H", "h" * 8000)] * 30])
        return [(request("GET", "/v1/executions", headers=headers), 0)]
    if kind == 7:  # long URIs, routed and over the limit
        n = rng.choice([600, 4000, 8000, 8150, 9000, 20000])
        return [(request("GET", "/v1/executions/E_" + "A" * n), 0)]
    if kind == 8:  # slow: a head trickled byte by byte, then abandoned or finished
        head = request("GET", "/v1/executions?length=5", headers=[("X-Slow", "s" * 20)])
        cut = rng.randint(10, len(head))
        steps = [(head[i:i + 1], 0.02) for i in range(0, min(cut, 60))]
        if rng.random() < 0.5:
            steps.append((head[min(cut, 60):], 0))
        return steps
    if kind == 9:  # several requests on one connection, some pipelined
        reqs = [request("GET", rng.choice(PATHS[:8])) for _ in range(rng.randint(2, 6))]
        return [(b"".join(reqs), 0)]
    if kind == 10:  # valid writes: far ahead, so nothing runs
        body = ('{"ffqn": "%s", "params": ["%s"], "scheduled_at": "2999-01-01T00:00:00Z"}'
                % (ECHO, "v" * rng.randint(0, 2000))).encode()
        return [(request("POST", "/v1/executions", body), 0)]
    return [(request("GET", rng.choice(["/v1/executions?length=100", "/metrics", "/v1/components"])), 0)]


def send(port, steps, timeout):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            for data, pause in steps:
                if data:
                    s.sendall(data)
                if pause:
                    time.sleep(pause)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
    except OSError:
        pass  # refused, reset, timed out: all fine for hostile traffic


def run_round(port, count, concurrency, rng_seed, seeds, timeout):
    lock = threading.Lock()
    remaining = [count]

    def worker(index):
        rng = random.Random(rng_seed * 1000 + index)
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            send(port, hostile(rng, seeds), timeout)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def healthz(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--requests", type=int, default=30000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--idle", type=float, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=15, help="per-connection socket timeout")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="stele_replay_")
    with open(os.path.join(work, "stele.toml"), "w") as f:
        f.write(CONFIG.format(dir=work, token=TOKEN, echo=ECHO))
    env = dict(os.environ)
    for kv in args.env:
        name, _, value = kv.partition("=")
        env[name] = value
    log = open(os.path.join(work, "server.log"), "w+")
    server = subprocess.Popen([args.binary, "server", "run", "--config", os.path.join(work, "stele.toml")],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    port = None
    deadline = time.time() + 60
    while port is None and time.time() < deadline and server.poll() is None:
        log.seek(0)
        m = re.search(r"listening on port (\d+)", log.read())
        if m:
            port = int(m.group(1))
        else:
            time.sleep(0.1)
    if port is None:
        log.seek(0)
        sys.exit("the server did not start:\n" + log.read())
    print(f"# stele {args.binary} pid={server.pid} port={port} requests={args.requests} "
          f"rounds={args.rounds} concurrency={args.concurrency} seed={args.seed} "
          f"env={' '.join(args.env) or '-'}", flush=True)
    seeds = corpus()
    run_round(port, 200, 4, 0, seeds, args.timeout)  # warm-up: caches, database pages
    report("start", server.pid)
    per_round = args.requests // args.rounds
    started = time.time()
    for r in range(1, args.rounds + 1):
        run_round(port, per_round, args.concurrency, args.seed * 100 + r, seeds, args.timeout)
        report(f"round {r} ({r * per_round})", server.pid)
    print(f"# {args.requests} requests in {time.time() - started:.0f} s", flush=True)
    time.sleep(args.idle)
    report(f"idle {args.idle:g} s", server.pid)
    ok = healthz(port)
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        code = -9
    log.seek(0)
    text = log.read()
    leaks = re.findall(r"SUMMARY: AddressSanitizer: .*", text)
    print(f"# healthz={'ok' if ok else 'FAILED'} exit={code} "
          f"{leaks[0] if leaks else 'no sanitizer summary'}", flush=True)
    if args.keep or code != 0 or leaks:
        print(f"# server log: {log.name}", flush=True)
    else:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok and code == 0 and not leaks else 1


if __name__ == "__main__":
    sys.exit(main())
