#!/usr/bin/env python3
"""Shared warm bridge vs a cold spawn, through the C ABI (bench/warm_start.c, release build).

1. Start -> first ping: interleaved pairs of processes (cold: a bridge of its own; warm:
   `sharedBridge` with the shared bridge already up), on the real bridge. Medians, and the median
   of the per-pair values (cold - warm, cold / warm). Target: warm <= 30 ms.
2. Twenty sequential one-prompt processes (`scenario:normal` on the bridge double), cold vs warm:
   total wall time of each series.

Everything runs in a private XDG_RUNTIME_DIR; the shared bridges are stopped at the end. Results
go to target/bench/warm.json and a table on stdout. --quick: fewer repetitions (<= 20 s).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_TARGET_MS = 30.0


def run(binary, env, *args):
    out = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"warm.py: {' '.join(args[:1])} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


def keepers(runtime):
    d = os.path.join(runtime, "cursor-sdk")
    out = []
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                out.append(json.load(f)["keeperPid"])
    return out


def keeper_memory_kb(pid):
    """The keeper's resident memory and the part of it no other process shares (its cost once the
    process that forked it is gone), from /proc/<pid>/smaps_rollup."""
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    fields[k] = int(v.split()[0])
    except OSError:
        return None
    return {"rss_kb": fields.get("Rss"), "private_kb": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)}


def stop_shared(runtime):
    """SIGTERM every registered keeper (it stops its bridge and unregisters); waits for them."""
    pids = keepers(runtime)
    for k in pids:
        if alive(k):
            os.kill(k, signal.SIGTERM)
    deadline = time.time() + 10
    while any(alive(k) for k in pids) and time.time() < deadline:
        time.sleep(0.02)
    left = [k for k in pids if alive(k)]
    if left:
        sys.exit(f"warm.py: keepers {left} did not stop")


def ms(ns):
    return ns / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bridge", required=True, help="the real bridge's launcher")
    ap.add_argument("--double", default=os.path.join(ROOT, "target/release/cursor-sdk-bridge-double"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/bench/warm_start"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target/bench/warm.json"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    pairs = 5 if a.quick else 12
    prompts = 6 if a.quick else 20

    with tempfile.TemporaryDirectory(prefix="cursor-sdk-warm-") as tmp:
        runtime = os.path.join(tmp, "run")
        work = os.path.join(tmp, "work")
        home = os.path.join(tmp, "home")
        for d in (runtime, work, home):
            os.makedirs(d, mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        env.pop("CURSOR_SDK_SHARED_BRIDGE", None)
        real = {"bridgePath": a.bridge, "workspace": work, "bridgeEnv": {"HOME": home}}
        double = {"bridgePath": a.double, "workspace": work, "apiKey": "k"}

        def opts(base, shared):
            return json.dumps(dict(base, sharedBridge=shared, sharedBridgeIdleMs=120000))

        try:
            # ---- start -> first ping, real bridge ------------------------------------------
            first_shared = run(a.bin, env, "ping", opts(real, True))["start_to_ping_ns"]
            cold, warm = [], []
            for _ in range(pairs):
                cold.append(run(a.bin, env, "ping", opts(real, False))["start_to_ping_ns"])
                warm.append(run(a.bin, env, "ping", opts(real, True))["start_to_ping_ns"])
            diffs = [c - w for c, w in zip(cold, warm)]
            ratios = [c / w for c, w in zip(cold, warm)]

            # ---- sequential one-prompt processes, double -------------------------------------
            msg = "scenario:normal Say hi"

            def series(shared):
                t0 = time.perf_counter_ns()
                for _ in range(prompts):
                    run(a.bin, env, "prompt", opts(double, shared), msg)
                return time.perf_counter_ns() - t0

            cold_total = series(False)
            run(a.bin, env, "ping", opts(double, True))  # the shared double is up from here
            warm_total = series(True)
            # Every process that forked a keeper has exited by now.
            memory = [keeper_memory_kb(k) for k in keepers(runtime)]
        finally:
            stop_shared(runtime)

    warm_med = statistics.median(warm)
    res = {
        "ping": {
            "bridge": "real",
            "pairs": pairs,
            "cold_ns": cold,
            "warm_ns": warm,
            "first_shared_start_ns": first_shared,
            "median_cold_ms": ms(statistics.median(cold)),
            "median_warm_ms": ms(warm_med),
            "median_pair_saving_ms": ms(statistics.median(diffs)),
            "median_pair_speedup": statistics.median(ratios),
            "warm_target_ms": WARM_TARGET_MS,
            "warm_target_met": ms(warm_med) <= WARM_TARGET_MS,
        },
        "prompts": {
            "bridge": "double",
            "message": "scenario:normal",
            "processes": prompts,
            "cold_total_ms": ms(cold_total),
            "warm_total_ms": ms(warm_total),
            "speedup": cold_total / warm_total,
        },
        "keeper_memory_after_hosts_exit": memory,
        "method": "one process per sample (warm_start.c via the C ABI); ping pairs interleaved cold, warm; "
        "warm = sharedBridge with the shared bridge already running; private XDG_RUNTIME_DIR",
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    p, q = res["ping"], res["prompts"]
    print(f"\nShared warm bridge ({'quick' if a.quick else 'full'}; {a.out})")
    print(f"{'':44} {'cold':>10} {'warm':>10} {'per pair':>16}")
    print(
        f"{'start -> first ping, real bridge (median)':44} {p['median_cold_ms']:>8.1f}ms {p['median_warm_ms']:>8.1f}ms"
        f" {p['median_pair_saving_ms']:>8.1f}ms saved, x{p['median_pair_speedup']:.0f}"
    )
    print(
        f"{f'{prompts} sequential one-prompt processes, double':44} {q['cold_total_ms']:>8.0f}ms {q['warm_total_ms']:>8.0f}ms"
        f" {'x%.1f' % q['speedup']:>16}"
    )
    for m in memory:
        if m:
            print(f"keeper process: {m['rss_kb']} kB resident, {m['private_kb']} kB of it its own")
    print(f"warm start -> first ping target <= {WARM_TARGET_MS:.0f} ms: {'met' if p['warm_target_met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
