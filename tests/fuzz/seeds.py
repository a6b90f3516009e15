#!/usr/bin/env python3
"""Write the seed corpora of the libFuzzer harnesses (tests/fuzz/corpus/NAME/).

    tests/fuzz/seeds.py            # rewrites tests/fuzz/corpus/ from the lists below

Each seed is a meaningful input, named for what it exercises, so that a fuzzing run starts
from every feature instead of rediscovering the formats.  The encodings mirror the harnesses:
fuzz_volatile.c (a configuration byte, then 8-byte operations), fuzz_opts.c (a mode byte, then
NUL-separated arguments or options) and fuzz_grammar.c (the value itself).  libFuzzer adds
what it finds to a scratch directory (contrib/fuzz.sh), never here: the corpus stays small.
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
PG = 4096
NP = 64

# ---- fuzz_volatile: one operation = opcode + 7 parameter bytes ----
MARK, UNMARK, WRITE, TRUNCATE, PUNCH, ALLOCATE, PURGE, ROOTPURGE, READ, FORGET, PROBE = \
    0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12


def op(code, *p):
    p = list(p) + [0] * (7 - len(p))
    return bytes([code] + [x & 0xFF for x in p])


def mark(page, pages, prio=None, age=False, second=None, sub=0, nul=False, notation=0,
         flags_first=False):
    """Mark pages [page, page + pages) (pages 0: unbounded), optionally a second range."""
    flags = (prio or 0) & 7
    flags |= 8 if prio is not None else 0
    flags |= 0x10 if age else 0
    flags |= 0x20 if second else 0
    flags |= 0x40 if flags_first else 0
    s2, n2 = second or (0, 0)
    return op(MARK, page, pages, (sub & 0xE) | (1 if nul else 0), flags, s2, n2, notation)


def bad_mark(page, pages, kind=0):
    """A mark with one malformed item: EINVAL, nothing changes."""
    return op(MARK, page, pages, 0, 0xC0, 0, 0, kind << 2)


def unmark(page, pages, second=None, xattr=False):
    """vol_unmark() (values checked), or user.volatile.unmark with xattr=True."""
    s2, n2 = second or (0, 0)
    return op(UNMARK, page, pages, 0, (1 if second else 0) | (2 if xattr else 0), s2, n2)


def io(code, off, length, extra=0):
    raw = length - 1
    assert 0 <= raw < 1 << 17 and off + length <= NP * PG
    return op(code, off, off >> 8, off >> 16, raw, raw >> 8, 4 | (raw >> 16 & 1), extra)


def write(off, length, seed=0x41):
    return io(WRITE, off, length, seed)


def punch(off, length):
    return io(PUNCH, off, length)


def allocate(off, length, keep_size=False):
    return io(ALLOCATE, off, length, 1 if keep_size else 0)


def read(off, length):
    return io(READ, off, length)


def read_all(off=0):
    return op(READ, off, off >> 8, off >> 16, 0, 0, 0, 1)


def truncate(size):
    return op(TRUNCATE, size, size >> 8, size >> 16, 0)


def purge_file():
    return op(PURGE)


def purge_root(size=None, notation=0):
    if size is None:
        return op(ROOTPURGE, 1)
    return op(ROOTPURGE, 0, size, size >> 8, size >> 16, 0, notation)


def forget():
    return op(FORGET, 1)


def probe():
    return op(PROBE)


def seek(off, hole=False):
    return op(FORGET, 2, off, off >> 8, off >> 16, 1 if hole else 0)


def query(off, length, maximum=8):
    return op(FORGET, 0, off, off >> 8, off >> 16, length, length >> 8,
              (length >> 16 & 3) | (maximum << 2))


KEEP, UNMARK_POLICY, EIO = 0, 1, 2

VOLATILE = {
    "purge-file-reads-zeros": (KEEP, [
        write(0, 5 * PG + 100), mark(1, 0), purge_file(), read_all(), query(0, 0)]),
    "overlap-absorbs-touching-stays": (KEEP, [
        write(0, 16 * PG), mark(0, 2, second=(4, 2)), mark(8, 2), mark(1, 5, prio=6),
        read(0, 10)]),
    "unmark-splits-and-reports": (KEEP, [
        write(0, 16 * PG), mark(0, 16), unmark(16, 4), unmark(4, 4), unmark(2, 4),
        purge_file(), unmark(0, 1, second=(10, 2)), unmark(12, 1, second=(14, 0), xattr=True)]),
    "unbounded-unit-bytes-to-size": (KEEP, [
        write(0, 10 * PG + 1), mark(0, 0), unmark(1, 0), write(20 * PG, 1), mark(30, 0),
        unmark(40, 5)]),
    "truncate-cuts-purged-and-bounded-units": (KEEP, [
        write(0, 8 * PG), mark(0, 2, second=(3, 3)), mark(7, 1, second=(8, 0)),
        purge_file(), truncate(3 * PG + 10), truncate(20 * PG), write(30 * PG, 7)]),
    "punch-removes-purged-bytes": (KEEP, [
        write(0, 4 * PG), mark(0, 0), purge_file(), punch(10, PG), write(100, 3),
        punch(2 * PG, 2 * PG)]),
    "root-purge-order-priority-age-lru": (KEEP, [
        write(0, 8 * PG), mark(0, 1, prio=5), mark(1, 1), mark(2, 1), mark(3, 1, age=True),
        read(PG, 1), purge_root(1), purge_root(1), purge_root(1), purge_root(1),
        purge_root(1)]),
    "root-purge-size-stops-when-enough": (KEEP, [
        write(0, 16 * PG), mark(0, 4, prio=0), mark(4, 4, prio=1), mark(8, 8, prio=1),
        purge_root(8 * 1024, notation=2), purge_root(5000, notation=1), purge_root(None)]),
    "write-policy-unmark": (UNMARK_POLICY, [
        write(0, 8 * PG), mark(0, 0), write(2 * PG + 5, 2), write(6 * PG, PG + 1),
        purge_root(None), read_all()]),
    "purged-read-eio": (EIO, [
        write(0, 2 * PG), mark(1, 1), purge_file(), read(0, PG), read(PG - 1, 2),
        write(PG, PG), read(PG, PG)]),
    "fallocate-keep-size-under-units": (KEEP, [
        allocate(0, 8 * PG, keep_size=True), mark(0, 0), write(100, 10), allocate(12 * PG, PG),
        purge_root(2 * PG), truncate(PG)]),
    "forget-purged-and-query": (KEEP, [
        write(0, 6 * PG), mark(0, 2, second=(4, 2)), purge_file(), write(PG, 10),
        query(PG // 2, 2 * PG, 1), query(0, 0, 0), forget(), query(0, 0)]),
    "seek-data-hole-after-purge": (KEEP, [
        write(0, 8 * PG), punch(2 * PG, PG), mark(4, 2), purge_file(), seek(0, hole=True),
        seek(100), seek(2 * PG + 1), seek(3 * PG - 1, hole=True), seek(4 * PG),
        seek(4 * PG + 5, hole=True), seek(8 * PG)]),
    "malformed-mark-changes-nothing": (KEEP, [
        write(0, 4 * PG), mark(0, 1), bad_mark(2, 1, 0), bad_mark(2, 1, 1),
        bad_mark(2, 1, 2)]),
    "probe-coldest-cached-then-read-refreshes": (KEEP, [
        write(0, 16 * PG), mark(0, 2), mark(2, 2), mark(4, 2, prio=1), mark(6, 2, age=True),
        mark(8, 1), mark(9, 1), mark(10, 1), mark(11, 1), mark(12, 1, prio=0), probe(), probe(),
        read(2 * PG, 1), probe(), purge_root(PG), probe(), allocate(0, 16 * PG), probe()]),
    "mark-notations": (KEEP, [
        write(0, 3 * PG), mark(0, 2, sub=6, nul=True, notation=0x55, flags_first=True,
                                prio=2, age=True),
        mark(4, 3, second=(6, 4), notation=0xAA), mark(64, 0), mark(0, 0, notation=4)]),
}


def random_program(rng, nops):
    out = bytearray([rng.randrange(4)])
    for _ in range(nops):
        out += bytes([rng.choice([0, 0, 2, 3, 3, 5, 6, 7, 8, 9, 10, 11, 12])] +
                     [rng.randrange(256) for _ in range(7)])
    return bytes(out)


# ---- fuzz_grammar: the value itself ----
GRAMMAR = {
    "spec-example": b"0:64K 1M:1M priority=1",
    "all-with-nul": b"all\0",
    "hex-and-flags": b"0x1000:0X2000,age\tpriority=7\n4096:0",
    "flags-first": b"age priority=0 8K:1",
    "largest-range": b"9223372036854771712:4096",
    "rounds-past-the-end": b"0:9223372036854771713",
    "offset-too-large": b"0x8000000000000000:0",
    "not-a-page": b"8K:4K 1:4K",
    "bad-priority": b"4096:4096 priority=8",
    "suffixes": b"1T:1t, 2g:3G 4m:5M 8k:9K",
    "overflow": b"99999999999999999999:0 18446744073709551615:1",
    "size-word": b" \t64M\n\0",
    "auto-word": b"unlink",
    "purge-word": b"\nall ",
    "stray-nul": b"0:4K\0 all",
    "long-item": b"0:" + b"0" * 70 + b"1",
    "strbuf-padding": bytes([1, 0xFF, 4, 0xFF, 7, 0xFF, 2]) + b"12345678" + b"\x00\x20" * 8,
}

# ---- fuzz_opts: raw (odd first byte) or structured (even) ----
def args(*a):
    return b"\x01" + b"\0".join(a)


def structured(*groups):
    """groups: lists of (name index, value) options; one argument per group."""
    out = bytearray(b"\x00")
    for i, g in enumerate(groups):
        out.append((len(g) - 1) | (4 if i % 2 == 0 else 0))
        for name, value in g:
            out.append(name)
            out += value + b"\0"
    return bytes(out)


OPTS = {
    "raw-limits": args(b"-o", b"memory_limit=64M,memory_low=32M", b"/mnt"),
    "raw-everything": args(b"-omemory_limit=1G,purged_read=eio,write_policy=unmark,"
                           b"mode=1777,uid=1000,gid=1000,auto=unlink", b"-f", b"/mnt"),
    "raw-fstab-noise": args(b"-o", b"_netdev,nofail,x-systemd.automount,comment=x,"
                            b"defaults,allow_other", b"/mnt"),
    "raw-low-above-limit": args(b"-o", b"memory_low=2M,memory_limit=1M", b"/mnt"),
    "raw-missing-argument": args(b"/mnt", b"-o"),
    "raw-double-dash": args(b"--", b"-o", b"memory_limit=0"),
    "raw-escapes": args(b"-o", b"fsname=a\\,b,memory_limit=0x10\\000000", b"/mnt"),
    "raw-repeated": args(b"-o", b"mode=7777,mode=0", b"-o", b"uid=4294967294,uid=1"),
    "structured-valid": structured([(0, b"64M"), (1, b"48M")], [(5, b"zero"), (6, b"keep")],
                                   [(2, b"0755"), (3, b"0"), (4, b"100")]),
    "structured-noise-and-kept": structured([(8, b""), (16, b"volatilefs")],
                                            [(13, b"automount"), (15, b""), (14, b"a,b")]),
    "structured-last-wins": structured([(0, b"1M"), (0, b"0"), (0, b"2M")], [(7, b"mark")]),
    "structured-bad-values": structured([(0, b"16777216T")], [(2, b"8000")],
                                        [(5, b"EIO")]),
}


def write_dir(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for k, v in seeds.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)


def main():
    vol = {k: bytes([cfg]) + b"".join(ops) for k, (cfg, ops) in VOLATILE.items()}
    rng = random.Random(20240601)
    for i in range(6):
        vol["random-%d" % i] = random_program(rng, 24)
    write_dir("fuzz_volatile", vol)
    write_dir("fuzz_grammar", GRAMMAR)
    write_dir("fuzz_opts", OPTS)


if __name__ == "__main__":
    main()
