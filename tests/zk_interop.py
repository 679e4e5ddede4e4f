#!/usr/bin/python3
"""zk_interop.py - kazoo's lock (an independent ZooKeeper client, Debian's python3-kazoo)
beside v11's, on one lock path: as zk_lock does, N grants held HOLD_MS each, a line per
grant "ENTER_NS EXIT_NS WAITED_NS" (the monotonic clock). kazoo is given Curator's node
pattern (extra_lock_patterns "-lock-"), so that it waits for Curator's and v11's nodes;
v11 waits for kazoo's "__lock__" nodes by itself.
Usage: zk_interop.py H:P,... ITEM N HOLD_MS
       zk_interop.py --check A.txt B.txt   (no overlap, and each side waited on the other)"""
import sys
import time


def grants(hosts, item, n, hold_ms):
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=10)
    lock = zk.Lock("/inventory/%s/lock" % item, "kazoo", extra_lock_patterns=("-lock-",))
    for _ in range(n):
        asked = time.monotonic_ns()
        lock.acquire(timeout=10)
        enter = time.monotonic_ns()
        time.sleep(hold_ms / 1000.0)
        print(enter, time.monotonic_ns(), enter - asked, flush=True)
        lock.release()
    zk.stop()


def load(path):
    return [tuple(int(x) for x in line.split()) for line in open(path) if line.strip()]


def check(a_path, b_path):
    a, b = load(a_path), load(b_path)
    both = sorted([(s, e, "a") for s, e, _ in a] + [(s, e, "b") for s, e, _ in b])
    overlaps = sum(1 for x, y in zip(both, both[1:]) if y[0] < x[1])

    def waited_on(mine, theirs):   # a grant whose wait spans a section of the other side's
        return sum(1 for s, _, w in mine if any(ts < s and te > s - w for ts, te, _ in theirs))
    print("grants a %d b %d, overlaps %d, a waited on b %d times, b on a %d times"
          % (len(a), len(b), overlaps, waited_on(a, b), waited_on(b, a)))
    return overlaps == 0 and waited_on(a, b) > 0 and waited_on(b, a) > 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(0 if check(sys.argv[2], sys.argv[3]) else 1)
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    grants(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
