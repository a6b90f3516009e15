#!/usr/bin/env python3
"""refs.py - every reference in the tree leads somewhere.

Fails, naming file and line, on:

- a repository path that does not exist: a word that starts with src/,
  include/, tests/, contrib/, docs/, man/ or bench/ (in comments of C
  files; anywhere in scripts, meson files and documents), or the target
  of a relative Markdown link;
- a repository path in a man page outside a roff comment: an installed
  page has no source tree beside it, so it cites its own sections;
- a section of docs/DESIGN.md or docs/FUSE-FACTS.md that does not exist:
  "DESIGN N", "DESIGN section N", "DESIGN sections N and M",
  "FUSE-FACTS N" (N must be a "## N." heading of that page);
- a citation of the documents that live outside the repository
  ("SPEC section N", "SPEC N", FUSE-NOTES);
- in a comment of src/ or include/: a file named without its directory
  (units.h) that the tree and /usr/include do not hold; a name with the
  prefix of one of src/'s modules (fs_, units_, evict_...) that no C
  code of src/, include/ or tests/ uses; a function cited as name() that
  no such code calls, declares or defines and no header under
  /usr/include names.  tests/lint/refs-allow.txt lists the few others
  (kernel names, mostly), each with why.

Usage: refs.py [ROOT]   (default: this tree)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..', '..'))
TOPS = ('src', 'include', 'tests', 'contrib', 'docs', 'man', 'bench')
SKIP_DIRS = ('tests/fuzz/corpus', 'tests/fuzz/regressions',
             'tests/lint/refs.py')  # this file names what it looks for
TEXT_EXT = ('.c', '.h', '.sh', '.py', '.md', '.build', '.txt', '.1', '.3',
            '.8', '.install', '.service', '.mount', '.example')

errors = []


def fail(path, line, msg):
    errors.append('%s:%d: %s' % (path, line, msg))


def tracked_files():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files'], capture_output=True,
                         text=True)
    if out.returncode == 0 and out.stdout:
        names = out.stdout.split('\n')
    else:  # not a git checkout (a release tarball): walk it
        names = []
        for d, _, fs in os.walk(ROOT):
            for f in fs:
                names.append(os.path.relpath(os.path.join(d, f), ROOT))
    return [n for n in names if n]


def scanned(rel):
    if rel == 'README.md' or rel == 'meson.build':
        return True
    if rel.split('/')[0] not in TOPS or rel.startswith(SKIP_DIRS):
        return False
    base = os.path.basename(rel)
    return base.endswith(TEXT_EXT) or base == 'meson.build' or \
        rel.startswith('contrib/bash-completion/')


def c_comments(text):
    """The comments of a C file, as (offset, text) pairs."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            i = j + 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append((i, text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append((i, text[i:j]))
            i = j
        else:
            i += 1
    return out


def c_code(text):
    """A C file with its comments blanked (lines kept)."""
    parts, last = [], 0
    for off, com in c_comments(text):
        parts.append(text[last:off])
        parts.append(re.sub(r'[^\n]', ' ', com))
        last = off + len(com)
    parts.append(text[last:])
    return ''.join(parts)


def line_of(text, off):
    return text.count('\n', 0, off) + 1


def headings(rel):
    nums = set()
    try:
        with open(os.path.join(ROOT, rel)) as f:
            for line in f:
                m = re.match(r'## (\d+)\.', line)
                if m:
                    nums.add(int(m.group(1)))
    except OSError:
        pass
    return nums


SECTIONS = {'DESIGN': headings('docs/DESIGN.md'),
            'FUSE-FACTS': headings('docs/FUSE-FACTS.md')}
# Between the words of a citation: spaces, line breaks and comment leaders.
GAP = r'(?:[\s*#/]|\\")+'
CITE = re.compile(r'\b(DESIGN|FUSE-FACTS)(?:\.md)?,?' + GAP +
                  r'(?:sections?' + GAP + r')?(\d+(?:(?:,' + GAP + r'|' + GAP +
                  r'and' + GAP + r')\d+)*)')
GONE = re.compile(r'\bSPEC(?:' + GAP + r'(?:sections?|§)' + GAP + r'?|' + GAP +
                  r')\d+|FUSE-NOTES')
PATH = re.compile(r'(?<![\w./$-])((?:' + '|'.join(TOPS) +
                  r')/[\w.+/-]*[\w+-])(?![\w$*{<%])')
# Paths of the kernel's tree that start like ours.
KERNEL = ('include/uapi/', 'include/linux/')
MDLINK = re.compile(r'\]\(([^)#\s:]+)(?:#[^)]*)?\)')
FUNC = re.compile(r'\b([A-Za-z_]\w*)\(\)')
# A name with a module's prefix (fs_, units_, evict_...): ours, so it must
# exist whether or not it is written with ().
# A file named without its directory (units.h, fs_data.c).
FNAME = re.compile(r'(?<![\w/.-])([\w-]+\.(?:c|h|sh|md|py))\b')
MODNAME = re.compile(r'\b([a-z][a-z0-9]*)_\w+')


def check_sections(rel, text):
    for m in CITE.finditer(text):
        doc = m.group(1)
        for num in re.findall(r'\d+', m.group(2)):
            if int(num) not in SECTIONS[doc]:
                fail(rel, line_of(text, m.start()),
                     '%s section %s does not exist' % (doc, num))
    for m in GONE.finditer(text):
        fail(rel, line_of(text, m.start()),
             '"%s" cites a document outside the repository (use DESIGN or '
             'FUSE-FACTS)' % m.group(0).replace('\n', ' '))


def built(p, files):
    """Is p a program the build makes (meson.build of its directory names
    it in executable())?"""
    mb = os.path.join(os.path.dirname(p), 'meson.build')
    if mb not in files:
        return False
    with open(os.path.join(ROOT, mb)) as f:
        return re.search(r"executable\(\s*'%s'" % re.escape(os.path.basename(p)),
                         f.read()) is not None


def path_ok(p, files, dirs):
    if p in files or p in dirs or built(p, files):
        return True
    if p + '.c' in files:  # a program built from its one source (bench/)
        return True
    # A placeholder (tests/fuzz/corpus/NAME) or a kernel tree path.
    if re.search(r'/[A-Z][A-Z_]*(?:/|$)', p) or p.startswith(KERNEL):
        return True
    return False


def check_paths(rel, text, files, dirs):
    for m in PATH.finditer(text):
        p = m.group(1).rstrip('.').rstrip('/')
        if not path_ok(p, files, dirs):
            fail(rel, line_of(text, m.start()), 'no such path: ' + p)


def check_man(rel, text):
    for no, line in enumerate(text.split('\n'), 1):
        if line.startswith('.\\"'):
            continue
        m = PATH.search(line)
        if m:
            fail(rel, no, 'a man page cites a repository path: ' + m.group(1))


def check_md_links(rel, text, files, dirs):
    here = os.path.dirname(rel)
    for m in MDLINK.finditer(text):
        p = os.path.normpath(os.path.join(here, m.group(1)))
        if p not in files and p not in dirs:
            fail(rel, line_of(text, m.start()), 'link to no such file: ' +
                 m.group(1))


def in_usr_include(names):
    """The names that some header under /usr/include mentions."""
    if not names or not os.path.isdir('/usr/include'):
        return set()
    args = ['grep', '-rhowE', '--include=*.h', '(' + '|'.join(sorted(names)) +
            ')', '/usr/include']
    out = subprocess.run(args, capture_output=True, text=True)
    return set(out.stdout.split())


def usr_include_files():
    names = set()
    for _, _, fs in os.walk('/usr/include'):
        names.update(fs)
    return names


def allowlist():
    names = set()
    try:
        with open(os.path.join(ROOT, 'tests/lint/refs-allow.txt')) as f:
            for line in f:
                line = line.split('#', 1)[0].strip()
                if line:
                    names.add(line)
    except OSError:
        pass
    return names


def main():
    rels = tracked_files()
    files = set(rels)
    dirs = set()
    for r in rels:
        d = os.path.dirname(r)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    known = set()      # names followed by ( in C code of src/include/tests
    idents = set()     # every identifier of that code
    cited = {}         # name -> first (file, line) citing it as name()
    named = {}         # module-prefixed name -> first (file, line) citing it
    fnames = {}        # file name (units.h) -> first (file, line) citing it
    prefixes = set(os.path.basename(r)[:-2].split('_')[0] for r in rels
                   if r.startswith('src/') and r.endswith('.c'))
    for rel in sorted(r for r in rels if scanned(r)):
        try:
            with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        is_c = rel.endswith(('.c', '.h'))
        if is_c:
            comments = c_comments(text)
            prose = ''.join(
                re.sub(r'[^\n]', ' ', text[last:off]) + com
                for (off, com), last in zip(
                    comments, [0] + [o + len(c) for o, c in comments]))
            if rel.split('/')[0] in ('src', 'include', 'tests'):
                code = c_code(text)
                known.update(re.findall(r'\b([A-Za-z_]\w*)\s*\(', code))
                idents.update(re.findall(r'\b[A-Za-z_]\w*', code))
            if rel.split('/')[0] in ('src', 'include'):
                for off, com in comments:
                    for m in FUNC.finditer(com):
                        cited.setdefault(m.group(1), (rel, line_of(
                            text, off + m.start())))
                    for m in FNAME.finditer(com):
                        fnames.setdefault(m.group(1), (rel, line_of(
                            text, off + m.start())))
                    for m in MODNAME.finditer(com):
                        named.setdefault(m.group(0), (m.group(1), rel, line_of(
                            text, off + m.start())))
        else:
            prose = text
        check_sections(rel, prose)
        if rel.startswith('man/'):
            check_man(rel, text)
        else:
            check_paths(rel, prose, files, dirs)
        if rel.endswith('.md'):
            check_md_links(rel, text, files, dirs)
    allow = allowlist()
    stems = set(os.path.basename(r).rsplit('.', 1)[0] for r in rels)
    for name, (prefix, rel, line) in sorted(named.items(),
                                            key=lambda kv: kv[1][1:]):
        if prefix not in prefixes or name in idents or name in stems or \
                name in allow:
            continue
        if name.endswith('_') and any(i.startswith(name) for i in idents):
            continue  # a family: notify_reply_*
        fail(rel, line, '%s is named nowhere in the code of src/, include/ '
             'or tests/' % name)
    bases = set(os.path.basename(r) for r in rels) | usr_include_files()
    for name, (rel, line) in sorted(fnames.items(), key=lambda kv: kv[1]):
        if name not in bases and name not in allow:
            fail(rel, line, 'no file is named %s' % name)
    unknown = set(cited) - known - allow
    unknown -= in_usr_include(unknown)
    for name in sorted(unknown, key=lambda n: cited[n]):
        rel, line = cited[name]
        fail(rel, line, '%s() is defined nowhere in src/, include/, tests/ '
             'or /usr/include (tests/lint/refs-allow.txt lists others)' % name)
    for e in errors:
        print(e)
    if errors:
        print('refs: %d reference(s) lead nowhere' % len(errors))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
