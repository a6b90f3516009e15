#!/bin/bash
# pycache.sh DAEMON - Python's bytecode cache (PYTHONPYCACHEPREFIX) on an
# auto=unlink volatilefs.
#
# A user points PYTHONPYCACHEPREFIX at a volatilefs (~/.cache/pycache on a
# mount): Python writes the .pyc of every module it imports there instead of
# in __pycache__ next to the source, and reads them back at the next start;
# a .pyc that a purge removed is compiled again (a cache miss).
#
# The program (off the mount): work.py imports about 70 standard library
# modules (about 230 .pyc files, 7-8 MiB: several times the headroom
# tighten_limit leaves) and a package of 40 generated modules of its own,
# and prints results computed with them: JSON, email, XML, CSV, TOML, SQL,
# decimal and fraction arithmetic, difflib, statistics, asyncio, a unittest
# run, argparse, the generated functions.  The reference is its output
# with no bytecode written (python3 -B).  With PYTHONPYCACHEPREFIX on the
# mount (-o auto=unlink, the limit lowered to the RSS plus a little),
# it runs three times: each must exit 0 and print the reference, and the
# cache must have been written to (.pyc files under the prefix after the
# first run, or purges of them); user.volatile.stats shows purges_total > 0
# and files_unlinked_total > 0; the mount still answers.  Runs
# /usr/bin/python3 (Debian package python3), whatever else is on PATH.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=cachelib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cachelib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 not installed (Debian package python3)"
	need setfattr attr
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o auto=unlink,memory_limit=1G
fi

tighten_limit 4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-pycache.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/app"

# The program's own package: 40 modules, each a few functions.
python3 - "$tmp/app" << 'PY'
import os, sys
top = os.path.join(sys.argv[1], "gen")
os.makedirs(top)
with open(os.path.join(top, "__init__.py"), "w") as f:
    f.write("MODULES = %r\n" % ["m%02d" % i for i in range(40)])
for i in range(40):
    with open(os.path.join(top, "m%02d.py" % i), "w") as f:
        f.write('"""Generated module %d."""\n\n' % i)
        for j in range(60):
            f.write("def f%d(x):\n    return (x * %d + %d) %% 1000003\n\n" % (j, i + 1, j))
        f.write("def total(x):\n    return sum(globals()['f%d' % j](x) for j in range(60))\n")
PY

cat > "$tmp/app/work.py" << 'PY'
import argparse, asyncio, base64, calendar, collections, concurrent.futures, configparser
import csv, ctypes, dataclasses, datetime, decimal, difflib, doctest, email.message
import email.parser, email.policy, fractions, ftplib, gettext, hashlib, html, html.parser
import http.client, http.server, imaplib, importlib, inspect, io, ipaddress, json, logging
import multiprocessing, optparse, pathlib, pdb, pickle, pprint, profile, pstats, pydoc
import pydoc_data.topics, re, shlex, smtplib, sqlite3, statistics, string, sys, tarfile
import textwrap, timeit, tomllib, trace, unittest, urllib.parse, urllib.request, uuid
import wsgiref.simple_server, xml.dom.minidom, xml.etree.ElementTree, xmlrpc.client, zipfile
import gen

out = []
data = {"name": "volatilefs", "sizes": [4096 * i for i in range(10)], "nested": {"a": [1, 2.5, None]}}
out.append(json.dumps(data, sort_keys=True))
msg = email.message.EmailMessage()
msg["Subject"] = "purged bytes"
msg["From"] = "a@example.org"
msg.set_content("Line one\nLine two: caf\u00e9\n")
parsed = email.parser.BytesParser(policy=email.policy.default).parsebytes(msg.as_bytes())
out.append(parsed["Subject"] + " | " + parsed.get_content().strip())
doc = xml.dom.minidom.parseString("<a><b x='1'>text</b><c/></a>")
out.append(doc.documentElement.toxml())
out.append(xml.etree.ElementTree.tostring(xml.etree.ElementTree.fromstring("<r><i>1</i><i>2</i></r>"), encoding="unicode"))
rows = list(csv.reader(io.StringIO("a,b\n1,\"x,y\"\n")))
out.append(repr(rows))
out.append(repr(tomllib.loads('title = "t"\n[owner]\nn = 3\n')))
db = sqlite3.connect(":memory:")
db.execute("create table t (k integer, v text)")
db.executemany("insert into t values (?, ?)", [(i, str(i * i)) for i in range(100)])
out.append(repr(db.execute("select count(*), sum(k), max(v) from t").fetchone()))
decimal.getcontext().prec = 50
out.append(str(decimal.Decimal(1) / decimal.Decimal(7)))
out.append(str(sum(fractions.Fraction(1, n) for n in range(1, 30))))
out.append("".join(difflib.unified_diff(["a\n", "b\n", "c\n"], ["a\n", "B\n", "c\n"], "x", "y")))
out.append(repr((statistics.mean(range(100)), statistics.median([3, 1, 2]), statistics.pstdev([1, 2, 3, 4]))))

async def square(x):
    await asyncio.sleep(0)
    return x * x

async def squares():
    return await asyncio.gather(*(square(i) for i in range(10)))

out.append(repr(asyncio.run(squares())))

class T(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(gen.m00.f1(2), 3)

result = unittest.TextTestRunner(stream=io.StringIO()).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))
out.append("unittest: run=%d failures=%d errors=%d" % (result.testsRun, len(result.failures), len(result.errors)))
parser = argparse.ArgumentParser(prog="p")
parser.add_argument("--n", type=int, default=1)
out.append(repr(vars(parser.parse_args(["--n", "5"]))))
out.append(repr([importlib.import_module("gen." + m).total(12345) for m in gen.MODULES]))
out.append(repr((len(pydoc_data.topics.topics), str(ipaddress.ip_network("10.0.0.0/30")),
                 urllib.parse.quote("a b/c"), html.escape("<&>"), base64.b64encode(b"vol").decode(),
                 textwrap.fill("word " * 30, 40), calendar.isleap(2024), shlex.split("a 'b c'"))))
text = "\n".join(out) + "\n"
sys.stdout.write(text)
print("sha256", hashlib.sha256(text.encode()).hexdigest())
PY

# Debian's Python, whatever else is on PATH (pyenv, a venv).
py=/usr/bin/python3
cd "$tmp/app"
env -u PYTHONPYCACHEPREFIX "$py" -B work.py > "$tmp/ref.txt" ||
	fail "the reference run (python3 -B) failed"
ok "reference: $(wc -l < "$tmp/ref.txt") lines ($SECONDS s)"

prefix=$VFS_TEST_DIR/pycache
for run in 1 2 3; do
	status=0
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$prefix" "$py" work.py > "$tmp/got.txt" ||
		status=$?
	eq "run $run: exit status" "$status" 0
	if ! cmp -s "$tmp/got.txt" "$tmp/ref.txt"; then
		diff "$tmp/ref.txt" "$tmp/got.txt" | head -n 10 >&2
		fail "run $run: the output differs from the reference (diff above)"
	fi
	ok "run $run: the reference output ($SECONDS s; $(find "$prefix" -name '*.pyc' 2> /dev/null | wc -l) .pyc files under the prefix)"
done
[[ -d $prefix ]] || fail "Python wrote nothing under PYTHONPYCACHEPREFIX=$prefix"
ok "Python's bytecode cache is on the mount"
purges_check
mount_answers
