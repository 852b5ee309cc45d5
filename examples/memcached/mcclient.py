#!/usr/bin/env python3
"""Round-trip check for a memcached server (text protocol, plain sockets).

    mcclient.py PORT [NKEYS] [--prefix P] [--small]

Sets NKEYS keys with values of varying size (a few bytes to ~2 KB, plus 3 items larger
than memcached's 512 KB chunk limit, stored as chunked items), reads them all back, deletes
and overwrites some, reads again, and compares every value. Prints one line
`ok N keys ...` or the first mismatches, and exits 1 on any mismatch. Also prints the
server's item count and evictions before the check, and its `oscar_views` /
`oscar_unprotected_items` slab stats (patched memcached only).

--small: values of at most ~1 KB and no chunked items, for a server whose memory is full
(items this size land in slab classes that already have pages, so the LRU evicts older
items, not the ones being checked).
"""
import socket
import sys

SMALL = "--small" in sys.argv


def value(prefix, i, gen):
    unit = b"%s:%d:%d|" % (prefix.encode(), i, gen)
    return unit * (1 + (i * 7919) % (60 if SMALL else 160))


def big(i, gen):
    return bytes((j * 31 + i + gen) & 0xFF for j in range(256)) * (2600 + 500 * i)


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.f = self.s.makefile("rwb")

    def send(self, data):
        self.f.write(data)

    def flush(self):
        self.f.flush()

    def line(self):
        l = self.f.readline()
        if not l:
            raise EOFError("server closed the connection")
        return l

    def get_reply(self):
        h = self.line()
        if h == b"END\r\n":
            return None
        parts = h.split()
        if parts[0] != b"VALUE":
            raise ValueError("unexpected reply %r" % h)
        n = int(parts[3])
        data = self.f.read(n + 2)[:-2]
        if self.line() != b"END\r\n":
            raise ValueError("missing END")
        return data

    def stats(self, arg=b""):
        self.send(b"stats %s\r\n" % arg if arg else b"stats\r\n")
        self.flush()
        out = {}
        while True:
            l = self.line()
            if l == b"END\r\n":
                return out
            p = l.split()
            out[p[1].decode()] = p[2].decode()


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else 3000
    prefix = sys.argv[sys.argv.index("--prefix") + 1] if "--prefix" in sys.argv else "k"
    c = Client(port)
    before = c.stats()
    nbig = 0 if SMALL else 3
    expect = {}
    bad = []

    def put(key, val):
        c.send(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val))
        expect[key] = val

    def check_all():
        keys = sorted(expect)
        for k in keys:
            c.send(b"get %s\r\n" % k)
        c.flush()
        for k in keys:
            got = c.get_reply()
            if got != expect[k]:
                bad.append((k, None if got is None else got[:40], expect[k] and expect[k][:40]))

    def batch_set(items):
        for k, v in items:
            put(k, v)
        c.flush()
        for _ in items:
            r = c.line()
            if r != b"STORED\r\n":
                raise ValueError("set failed: %r" % r)

    batch_set([(b"%s%d" % (prefix.encode(), i), value(prefix, i, 0)) for i in range(n)])
    batch_set([(b"%sbig%d" % (prefix.encode(), i), big(i, 0)) for i in range(nbig)])
    check_all()
    # delete every 5th key, overwrite every 3rd (frees items, reallocates chunks)
    for i in range(0, n, 5):
        k = b"%s%d" % (prefix.encode(), i)
        c.send(b"delete %s\r\n" % k)
        expect[k] = None
    c.flush()
    for i in range(0, n, 5):
        c.line()
    batch_set([(b"%s%d" % (prefix.encode(), i), value(prefix, i, 1)) for i in range(0, n, 3)])
    batch_set([(b"%sbig%d" % (prefix.encode(), i), big(i, 1)) for i in range(0, nbig, 2)])
    check_all()
    st = c.stats(b"slabs")
    extra = " (server had %s items, %s evictions) oscar_views=%s oscar_unprotected_items=%s" % (
        before.get("curr_items"), before.get("evictions"),
        st.get("oscar_views", "-"), st.get("oscar_unprotected_items", "-"))
    if bad:
        print("MISMATCH %d of %d keys, e.g. %r%s" % (len(bad), len(expect), bad[:3], extra))
        sys.exit(1)
    print("ok %d keys round-trip%s" % (len(expect), extra))


if __name__ == "__main__":
    main()
