#!/usr/bin/env python3
# Survey of public SPICE decks: runs each deck through anasim and ngspice 39 (the test binary's "survey one public
# deck" case, one process per deck with a time limit) and counts run+match / different / blocked.
# Usage: survey.py TEST_BINARY DECK_LIST [--timeout S] [--csv OUT]; DECK_LIST has one deck path per line.
import argparse, collections, csv, os, re, subprocess, sys


def run_one(binary, deck, timeout):
    env = dict(os.environ, ANASIM_COMPAT_DECK=deck)
    try:
        p = subprocess.run([binary, '-tc=spice compat: survey one public deck', '--no-intro', '--no-version'],
                           env=env, cwd=os.path.dirname(deck), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 'blocked', f'timeout after {timeout} s'
    m = re.search(r'^survey: ([a-z-]+):\s*(.*)$', p.stdout, re.M)
    if m is None:  # a crash or an abort: the worst outcome, reported as such
        return 'crashed', (p.stdout + p.stderr)[-300:].replace('\n', ' ')
    return m.group(1), m.group(2)


def blocker(detail):
    """The kind of a blocking message: the message without its location and quoted names."""
    d = re.sub(r'^\S+:\d+:\d+: error: ', '', detail)
    d = re.sub(r"'[^']*'", "'...'", d)
    return d[:90]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('binary')
    ap.add_argument('decks')
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--csv')
    a = ap.parse_args()
    decks = [l.strip() for l in open(a.decks) if l.strip() and not l.startswith('#')]
    rows = []
    for d in decks:
        status, detail = run_one(os.path.abspath(a.binary), os.path.abspath(d), a.timeout)
        rows.append((d, status, detail))
        print(f'{status:15s} {d}: {detail[:200]}', flush=True)
    counts = collections.Counter(r[1] for r in rows)
    print('\n' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())) + f' (of {len(rows)})')
    reasons = collections.Counter(blocker(r[2]) for r in rows if r[1] == 'blocked')
    for k, v in reasons.most_common():
        print(f'{v:4d}  {k}')
    if a.csv:
        with open(a.csv, 'w', newline='') as f:
            csv.writer(f).writerows([('deck', 'status', 'detail')] + rows)


if __name__ == '__main__':
    sys.exit(main())
