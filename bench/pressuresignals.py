#!/usr/bin/env python3
"""pressuresignals.py - the measurement behind the daemon's shortage-or-churn decision
(src/daemon/pressure.c, above pressure_in_use).

  pressuresignals.py sample CGDIR OUT.tsv MOUNT -- CMD...
      Run CMD as a member of the v1 memory cgroup CGDIR (needs root) and sample, every 10 ms
      until 0.3 s after it exits: memory.usage_in_bytes and memory.stat of the cgroup,
      /proc/pressure/memory (the some/full totals), the events of memory.pressure_level
      (eventfds registered for low, medium and critical) and of a PSI trigger like the
      daemon's (some 150 ms in 2 s), and volatile_bytes and pressure_purges_total of the
      volatilefs mounted at MOUNT ('-': none).  Prints CMD's exit status and time.
  pressuresignals.py analyze LIMIT_MIB OUT.tsv...
      For each sampled run, what each candidate would have said: usage over limit - headroom
      (the daemon before), usage less clean page cache (inactive_file + active_file - dirty -
      writeback) over it (with mapped pages counted as not droppable, too), the PSI some and
      full share over 1 s windows, file refaults, and the growth of anonymous memory over
      100 ms windows.

The scenarios of the figures in pressure.c, each in a fresh cgroup with memory.limit_in_bytes
1536M and a volatilefs daemon in it (-o memory_limit=4G,pressure=off to see the signals, or on
to see what it does) holding a 64 MiB ordinary file and 8 or 16 files of 64 MiB marked
volatile, written from outside the cgroup, and a 4 GiB file on disk dropped from the page
cache (dd if=FILE iflag=nocache count=0):
  churn:  sample CG churn.tsv MNT -- cat FILE
  hog:    sample CG hog.tsv MNT -- build/tests/mount/memhog 900
  mixed:  sample CG mixed.tsv MNT -- sh -c 'cat FILE >/dev/null & sleep 0.5;
              build/tests/mount/memhog 1000; r=$?; wait; exit $r'
"""
import os
import select
import subprocess
import sys
import time

COLS = ["usage", "total_cache", "total_rss", "total_shmem", "total_mapped_file", "total_dirty",
        "total_writeback", "total_inactive_file", "total_active_file", "total_inactive_anon",
        "total_active_anon", "total_workingset_refault_file", "total_pgmajfault"]
MIB = 1 << 20


def rd(path):
    with open(path) as f:
        return f.read()


def sample(cg, out, mnt, cmd):
    def stat():
        d = dict(line.split() for line in rd(cg + "/memory.stat").splitlines())
        d["usage"] = rd(cg + "/memory.usage_in_bytes").strip()
        return d

    def psi():
        return {w[0]: w[4].split("=")[1] for w in
                (line.split() for line in rd("/proc/pressure/memory").splitlines())}

    ctl = os.open(cg + "/cgroup.event_control", os.O_WRONLY)
    lvl = os.open(cg + "/memory.pressure_level", os.O_RDONLY)
    efds = {}
    for name in ("low", "medium", "critical"):
        e = os.eventfd(0, os.EFD_NONBLOCK)
        os.write(ctl, f"{e} {lvl} {name}".encode())
        efds[name] = e
    trig = os.open("/proc/pressure/memory", os.O_RDWR | os.O_NONBLOCK)
    os.write(trig, b"some 150000 2000000\0")
    po = select.poll()
    po.register(trig, select.POLLPRI)
    cnt = {"low": 0, "medium": 0, "critical": 0, "psi": 0}

    def join():
        with open(cg + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    p = subprocess.Popen(cmd, preexec_fn=join, stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    end = None
    with open(out, "w") as f:
        f.write("\t".join(["t"] + COLS + ["psi_some", "psi_full", "ev_low", "ev_medium",
                                          "ev_critical", "ev_psi", "vol", "ppurges"]) + "\n")
        while True:
            for name, e in efds.items():
                try:
                    cnt[name] += int.from_bytes(os.read(e, 8), "little")
                except BlockingIOError:
                    pass
            if po.poll(0):
                cnt["psi"] += 1
            s, ps = stat(), psi()
            vol = pp = 0
            if mnt != "-":
                try:
                    st = dict(x.split("=", 1) for x in
                              os.getxattr(mnt, "user.volatile.stats").decode().split() if "=" in x)
                    vol, pp = st.get("volatile_bytes", 0), st.get("pressure_purges_total", 0)
                except OSError:
                    pass
            t = time.monotonic() - t0
            f.write("\t".join([f"{t:.3f}"] + [str(s.get(c, 0)) for c in COLS] +
                              [ps["some"], ps["full"]] +
                              [str(cnt[k]) for k in ("low", "medium", "critical", "psi")] +
                              [str(vol), str(pp)]) + "\n")
            if end is None and p.poll() is not None:
                end = t
            if end is not None and t > end + 0.3:
                break
            time.sleep(0.01)
    print(f"exit {p.returncode} seconds {end:.2f}")


def analyze(limit_mib, files):
    lim = limit_mib * MIB
    head = max(64 * MIB, lim // 20)
    thr = lim - head
    for fn in files:
        with open(fn) as f:
            lines = f.read().splitlines()
        hdr = lines[0].split("\t")
        R = [dict(zip(hdr, map(float, ln.split("\t")))) for ln in lines[1:]]
        n = len(R)
        over = over_clean = over_mapped = 0
        first = None
        max_in_use = max_in_use_m = 0
        psi_some = psi_full = refault = growth = 0
        for i, r in enumerate(R):
            clean = max(0, r["total_inactive_file"] + r["total_active_file"] - r["total_dirty"]
                        - r["total_writeback"])
            in_use = max(0, r["usage"] - clean)
            in_use_m = in_use + r["total_mapped_file"]
            over += r["usage"] > thr
            if in_use > thr:
                over_clean += 1
                first = r["t"] if first is None else first
            over_mapped += in_use_m > thr
            max_in_use = max(max_in_use, in_use)
            max_in_use_m = max(max_in_use_m, in_use_m)
            j = i
            while j > 0 and r["t"] - R[j]["t"] < 1.0:
                j -= 1
            if r["t"] - R[j]["t"] >= 0.5:
                dt = (r["t"] - R[j]["t"]) * 1e6
                psi_some = max(psi_some, (r["psi_some"] - R[j]["psi_some"]) / dt)
                psi_full = max(psi_full, (r["psi_full"] - R[j]["psi_full"]) / dt)
                refault = max(refault, (r["total_workingset_refault_file"] -
                                        R[j]["total_workingset_refault_file"]) * 4096 /
                              (dt / 1e6) / MIB)
            k = i
            while k > 0 and r["t"] - R[k]["t"] < 0.1:
                k -= 1
            if r["t"] > R[k]["t"]:
                growth = max(growth, (r["total_rss"] - R[k]["total_rss"]) /
                             (r["t"] - R[k]["t"]) / MIB)
        last = R[-1]
        print(f"{fn}: {n} samples over {last['t']:.1f} s; events low/medium/critical/psi "
              f"{last['ev_low']:.0f}/{last['ev_medium']:.0f}/{last['ev_critical']:.0f}/"
              f"{last['ev_psi']:.0f}")
        print(f"  usage > limit - headroom ({thr / MIB:.0f} MiB): {over}/{n} samples "
              f"({100 * over / n:.0f}%)")
        print(f"  usage - clean cache > it: {over_clean}/{n}, first at {first}; "
              f"at most {max_in_use / MIB:.0f} MiB")
        print(f"  same with mapped pages not droppable: {over_mapped}/{n}; "
              f"at most {max_in_use_m / MIB:.0f} MiB")
        print(f"  PSI over 1 s at most: some {100 * psi_some:.1f}% full {100 * psi_full:.1f}%; "
              f"file refaults at most {refault:.1f} MiB/s; anon growth at most {growth:.0f} MiB/s")
        print(f"  at most: cache {max(r['total_cache'] for r in R) / MIB:.0f} MiB, rss "
              f"{max(r['total_rss'] for r in R) / MIB:.0f} MiB, mapped "
              f"{max(r['total_mapped_file'] for r in R) / MIB:.0f} MiB, dirty "
              f"{max(r['total_dirty'] for r in R) / MIB:.0f} MiB")


def main():
    a = sys.argv[1:]
    if len(a) >= 6 and a[0] == "sample" and a[4] == "--":
        sample(a[1], a[2], a[3], a[5:])
    elif len(a) >= 3 and a[0] == "analyze":
        analyze(int(a[1]), a[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
