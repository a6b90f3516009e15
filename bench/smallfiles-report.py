#!/usr/bin/env python3
"""Summarise the raw snapshots of bench/smallfiles.sh as markdown (stdout) and a TSV.

    python3 bench/smallfiles-report.py OUTDIR

OUTDIR/raw/MODEL-N-SIZE-rREP/ holds {before,after,dropped}.{meminfo,slabinfo,rss,cg-mk,
cg-daemon}, n, loadavg, mkfiles.out and, for volatilefs, stats.  Writes OUTDIR/runs.tsv (one
line per run, deltas in bytes) and prints medians over the repetitions, per file.
"""
import os
import re
import statistics
import sys

PAGE = 4096
MEMKEYS = ["Used", "Cached", "Shmem", "PageCache", "Slab", "SReclaimable", "SUnreclaim",
           "AnonPages", "PageTables"]
CGKEYS = ["usage", "kmem", "cache", "rss", "shmem", "pagecache"]
STAGES = ("before", "after", "dropped")
ORDER = {"volatilefs": 0, "tmpfs": 1, "backing": 2, "tmpfile": 3}


def meminfo(path):
    d = {}
    with open(path) as f:
        for line in f:
            k, v = line.split(":", 1)
            d[k] = int(v.split()[0]) * 1024
    d["Used"] = d["MemTotal"] - d["MemFree"]
    d["PageCache"] = d["Cached"] - d["Shmem"]  # Cached counts shmem (tmpfs) pages too
    return d


def slabinfo(path):
    """Bytes of slab pages per cache (num_slabs * pagesperslab * 4096)."""
    d = {}
    with open(path) as f:
        for line in f:
            if line.startswith(("slabinfo", "#")):
                continue
            p = line.split()
            d[p[0]] = int(p[p.index("slabdata") + 2]) * int(p[5]) * PAGE
    return d


def cgstat(path):
    """usage, kmem and memory.stat of a cgroup snapshot; zeros when there is none."""
    d = dict.fromkeys(CGKEYS, 0)
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, v = line.split()
                if k in d:
                    d[k] = int(v)
    d["pagecache"] = d["cache"] - d["shmem"]
    return d


def read_int(path):
    with open(path) as f:
        return int(float(f.read().split()[0]))  # older runs: awk printed %g


def kv(path):
    d = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.strip().split("=", 1) if "=" in line else line.split(None, 1)
                if len(p) == 2:
                    d[p[0]] = p[1].strip()
    return d


def load(out):
    runs = []
    rawdir = os.path.join(out, "raw")
    for name in sorted(os.listdir(rawdir)):
        m = re.fullmatch(r"(\w+)-(\d+)-(\d+)-r(\d+)", name)
        rd = os.path.join(rawdir, name)
        if not m or not os.path.exists(os.path.join(rd, "dropped.meminfo")):
            continue  # not a run, or an interrupted one
        mk = kv(os.path.join(rd, "mkfiles.out"))
        st = kv(os.path.join(rd, "stats"))
        r = {"model": m.group(1), "size": int(m.group(3)), "rep": int(m.group(4)),
             "n": read_int(os.path.join(rd, "n")),
             "create_s": float(mk["create_s"]), "create_per_s": float(mk["create_per_s"]),
             "load": open(os.path.join(rd, "loadavg")).read().split()[0],
             "stats_rss": int(st.get("rss", 0)), "stats_data": int(st.get("data_bytes", 0)),
             "cg": os.path.exists(os.path.join(rd, "before.cg-mk"))}
        mi = [meminfo(os.path.join(rd, s + ".meminfo")) for s in STAGES]
        sl = [slabinfo(os.path.join(rd, s + ".slabinfo")) for s in STAGES]
        rss = [read_int(os.path.join(rd, s + ".rss")) for s in STAGES]
        # "X" is after creation minus before, "dd_X" after drop_caches minus before.
        for pre, i in (("", 1), ("dd_", 2)):
            for k in MEMKEYS:
                r[pre + k] = mi[i][k] - mi[0][k]
            r[pre + "VmRSS"] = rss[i] - rss[0]
            names = set(sl[i]) | set(sl[0])
            r[pre + "slabs"] = {c: sl[i].get(c, 0) - sl[0].get(c, 0) for c in names}
        for which in ("mk", "daemon"):
            cs = [cgstat(os.path.join(rd, f"{s}.cg-{which}")) for s in STAGES]
            for pre, i in (("", 1), ("dd_", 2)):
                for k in CGKEYS:
                    r[f"{pre}{which}_{k}"] = cs[i][k] - cs[0][k]
        runs.append(r)
    return runs


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x):
    return "-" if x != x else f"{x:,.0f}"


def pf(rs, field):
    """Median over the runs of field / files."""
    return med([r[field] / r["n"] for r in rs])


def two(rs, field):
    """'after creation -> after drop_caches', per file."""
    return f"{fmt(pf(rs, field))} -> {fmt(pf(rs, 'dd_' + field))}"


def write_tsv(out, runs):
    cols = ["model", "n", "size", "rep", "load", "create_s", "create_per_s", "stats_rss",
            "stats_data"]
    for pre in ("", "dd_"):
        cols += [pre + k for k in MEMKEYS + ["VmRSS"]]
        cols += [f"{pre}{w}_{k}" for w in ("mk", "daemon") for k in CGKEYS]
    with open(os.path.join(out, "runs.tsv"), "w") as f:
        f.write("\t".join(cols + ["top_slabs_after"]) + "\n")
        for r in runs:
            top = sorted(r["slabs"].items(), key=lambda x: -x[1])[:6]
            f.write("\t".join(str(r[c]) for c in cols) + "\t"
                    + ",".join(f"{c}:{v}" for c, v in top) + "\n")


def main():
    out = sys.argv[1]
    runs = load(out)
    if not runs:
        sys.exit("no complete runs under " + out)
    write_tsv(out, runs)
    g = {}
    for r in runs:
        g.setdefault((r["model"], r["n"], r["size"]), []).append(r)
    keys = sorted(g, key=lambda k: (k[1] if k[0] != "tmpfile" else 0, k[2], ORDER.get(k[0], 9)))
    cg = all(r["cg"] for r in runs)

    if cg:
        print("### Memory cgroups of the run (medians, bytes per file)\n")
        print("The creating program (mkfiles) and the daemon each ran in a fresh v1 memory "
              "cgroup: the creator is charged with the kernel objects it makes (FUSE or tmpfs "
              "inodes, dentries, open files: `kmem`) and with the pages it writes (FUSE page "
              "cache, or shmem); the daemon with its own memory. Each cell: right after "
              "creation -> after `sync; echo 3 > /proc/sys/vm/drop_caches`.\n")
        print("| model | N | size | reps | create s | files/s | daemon cgroup | daemon VmRSS | "
              "creator kmem | creator page cache | creator shmem | total |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for k in keys:
            rs = g[k]
            tot = med([(r["mk_usage"] + r["daemon_usage"]) / r["n"] for r in rs])
            tot_d = med([(r["dd_mk_usage"] + r["dd_daemon_usage"]) / r["n"] for r in rs])
            print(f"| {k[0]} | {k[1]:,} | {k[2]} | {len(rs)} | "
                  f"{med([r['create_s'] for r in rs]):.2f} | "
                  f"{fmt(med([r['create_per_s'] for r in rs]))} | {two(rs, 'daemon_usage')} | "
                  f"{two(rs, 'VmRSS')} | {two(rs, 'mk_kmem')} | {two(rs, 'mk_pagecache')} | "
                  f"{two(rs, 'mk_shmem')} | {fmt(tot)} -> {fmt(tot_d)} |")
        print()

    print("### Machine-wide /proc/meminfo deltas (medians, bytes per file; right after "
          "creation -> after drop_caches)\n")
    print("Everything else running on the machine moves these"
          + ("; the cgroup figures above are the ones to use.\n" if cg else ".\n"))
    print("| model | N | size | Used | Slab | SUnreclaim | Shmem | page cache (Cached-Shmem) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        rs = g[k]
        print(f"| {k[0]} | {k[1]:,} | {k[2]} | "
              + " | ".join(two(rs, f) for f in ("Used", "Slab", "SUnreclaim", "Shmem",
                                                 "PageCache")) + " |")

    print("\n### Slab caches that grew, machine-wide (median bytes of slab pages per file; "
          "after creation -> after drop_caches)\n")
    print("| model | N | size | caches |")
    print("|---|---:|---:|---|")
    for k in keys:
        rs = g[k]
        names = set()
        for r in rs:
            names |= {c for c, v in r["slabs"].items() if v >= 16 * r["n"]}
        items = sorted(((med([r["slabs"].get(c, 0) / r["n"] for r in rs]),
                         med([r["dd_slabs"].get(c, 0) / r["n"] for r in rs]), c)
                        for c in names), reverse=True)
        print(f"| {k[0]} | {k[1]:,} | {k[2]} | "
              + ", ".join(f"{c} {a:.0f} -> {d:.0f}" for a, d, c in items) + " |")

    model_costs(g, cg)


def model_costs(g, cg):
    """The two models' costs per file, from the measured parts."""
    if cg:
        def classic(r, p):  # everything the run charged to the daemon and the creator
            return r[p + "daemon_usage"] + r[p + "mk_usage"]

        def daemon(r, p):
            return r[p + "daemon_usage"]

        def fuse_k(r, p):  # the kernel's FUSE inodes and dentries, charged to the creator
            return r[p + "mk_kmem"]

        def backing_file(r, p):  # its tmpfs objects and pages
            return r[p + "mk_usage"]
        src = "the memory cgroups"
    else:
        def classic(r, p):
            return r[p + "VmRSS"] + r[p + "Slab"] + r[p + "PageCache"]

        def daemon(r, p):
            return r[p + "VmRSS"]

        def fuse_k(r, p):
            return r[p + "Slab"]

        def backing_file(r, p):
            return r[p + "Slab"] + r[p + "Shmem"]
        src = "/proc/meminfo (noisy)"

    print(f"\n### Cost per file of each model (bytes, medians, from {src})\n")
    print("- classic = the daemon (metadata + data pages) + the kernel's FUSE inodes and "
          "dentries + the FUSE page cache of the written data.\n"
          "- backing = the daemon's metadata (the classic daemon less its data pages, "
          "ceil(size/4096)*4096 a file) + the same FUSE inodes and dentries (the file is still "
          "a FUSE inode) + the backing file (tmpfs inode, dentry, pages); no FUSE page cache "
          "(passthrough: the data exists once).\n"
          "- reclaimed: after `drop_caches`, when the kernel has taken back what it can (the "
          "FUSE page cache, FUSE inodes and dentries; not tmpfs's).\n"
          "- backing, no page map: the same with the daemon's metadata of an empty file (its "
          "0-byte run at the same N): a daemon whose data is in backing files keeps no page map "
          "(the first 64-slot node of a file's page map is ~530 B).\n"
          "- O_TMPFILE: backing files held by one descriptor each (as a registered backing id "
          "holds a struct file), at the largest N the descriptor limit allows.\n")
    print("| N | size | classic | backing (named) | backing, no page map | backing (O_TMPFILE) | "
          "classic reclaimed | backing reclaimed | backing reclaimed, no page map | "
          "daemon metadata | FUSE kernel objects | backing file (named) | "
          "backing file (O_TMPFILE) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, size in sorted({(k[1], k[2]) for k in g if k[0] == "volatilefs"}):
        v = g[("volatilefs", n, size)]
        b = g.get(("backing", n, size)) or g.get(("tmpfs", n, size))
        t = [rs for (m, _, s), rs in g.items() if m == "tmpfile" and s == size]
        datap = -(-size // PAGE) * PAGE
        row = {}
        for p in ("", "dd_"):
            row[p + "classic"] = med([classic(r, p) / n for r in v])
            row[p + "meta"] = med([daemon(r, p) / n - datap for r in v])
            row[p + "fuse"] = med([fuse_k(r, p) / n for r in v])
            row[p + "bfile"] = med([backing_file(r, p) / r["n"] for r in b]) if b else float("nan")
            row[p + "backing"] = row[p + "meta"] + row[p + "fuse"] + row[p + "bfile"]
            v0 = g.get(("volatilefs", n, 0))
            meta0 = med([daemon(r, p) / n for r in v0]) if v0 else float("nan")
            row[p + "backing0"] = meta0 + row[p + "fuse"] + row[p + "bfile"]
        tfile = med([backing_file(r, "") / r["n"] for r in t[0]]) if t else float("nan")
        print(f"| {n:,} | {size} | {fmt(row['classic'])} | {fmt(row['backing'])} | "
              f"{fmt(row['backing0'])} | {fmt(row['meta'] + row['fuse'] + tfile)} | "
              f"{fmt(row['dd_classic'])} | {fmt(row['dd_backing'])} | {fmt(row['dd_backing0'])} | "
              f"{fmt(row['meta'])} -> {fmt(row['dd_meta'])} | "
              f"{fmt(row['fuse'])} -> {fmt(row['dd_fuse'])} | "
              f"{fmt(row['bfile'])} -> {fmt(row['dd_bfile'])} | {fmt(tfile)} |")


if __name__ == "__main__":
    main()
