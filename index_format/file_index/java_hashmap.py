"""Iteration order of a default `java.util.HashMap` (JDK 17: capacity 16, load factor 0.75), spec §7.7 / §9.

Keys are identified by their index in the input: `hashes[i]` is the Java `hashCode()` of the i-th DISTINCT
key, in the order the keys were first inserted; `sort_keys[i]` (optional) is a Python sort key giving the
key's `compareTo` order (e.g. `values.java_order`, `java_hash.java_string_order`). Sort keys are only
consulted inside tree bins, for two keys with the same spread hash; without them such a case raises
ValueError. All functions return key indices in iteration order.

- `computeifabsent_order(hashes, sort_keys=None, *, trailing_call)`: a map filled by `computeIfAbsent`
  (the bitmap writer's `id2bitmap`, the container's outer map). `trailing_call`: at least one more call (for
  an existing key) followed the last new key, so a resize pending at that point happened. Fast: the order
  is computed with numpy, and only keys in bins that may ever have become red-black trees are simulated.
- `simulate_computeifabsent(...)`: the same answer by a plain simulation of every call (reference / tests).
- `put_order(hashes, sort_keys=None)`: a map filled by `put` (tail insertion, resize after insertion).

The model follows the JDK code: `computeIfAbsent` resizes at the start of a call when `size > threshold`,
inserts a new key at the HEAD of a list bin and calls `treeifyBin` when the bin already held >= 7 keys;
`putVal` appends at the tail and calls `treeifyBin` when the bin held >= 8 keys, then resizes when
`++size > threshold`. `treeifyBin` doubles the table instead when the capacity is < 64. Tree bins follow
`TreeNode.treeify` / `putTreeVal` (new node linked right after its tree parent) / `balanceInsertion` /
`moveRootToFront` / `split` (halves of <= 6 nodes untreeified, others re-treeified when the other half is
non-empty). Tree order: spread hash as a signed int, then `compareTo`.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from index_format.layout import java_int

__all__ = ["SortKeys", "computeifabsent_order", "put_order", "simulate_computeifabsent", "spread"]


class SortKeys(Protocol):
    """Key index → its Java compareTo sort key: a list, or sort keys computed on demand."""

    def __getitem__(self, i: int, /) -> Any: ...   # Any: keys of one kind, compared with <


_M32 = 0xFFFFFFFF
_INITIAL_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64


def spread(h: int) -> int:
    """`HashMap.hash`: h ^ (h >>> 16), as a signed int32 (what tree bins compare)."""
    u = h & _M32
    return java_int(u ^ (u >> 16))


def _threshold(cap: int) -> int:
    return cap * 3 // 4


class _Node:
    """A `HashMap.TreeNode`: tree links plus the bin's doubly linked list (`prev`/`next`)."""

    __slots__ = ("key", "hash", "parent", "left", "right", "prev", "next", "red")

    def __init__(self, key: int, h: int) -> None:
        self.key = key
        self.hash = h
        self.parent: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None
        self.red = False


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    lf = p.left
    if lf is not None:
        lr = p.left = lf.right
        if lr is not None:
            lr.parent = p
        pp = lf.parent = p.parent
        if pp is None:
            root = lf
            lf.red = False
        elif pp.right is p:
            pp.right = lf
        else:
            pp.left = lf
        lf.right = p
        p.parent = lf
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.right:
                    x = xp
                    root = _rotate_left(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = _rotate_right(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_left(root, xpp)


class _Table:
    """The bins of a HashMap: bucket → list of keys in `next` order (list bin) or its first `_Node` (tree).

    Only structure is modelled; the caller decides when to resize (so a subset of the keys can be run on
    the full map's schedule). Bins are a dict so a sparse subset at a large capacity stays cheap.
    """

    def __init__(self, hashes: Sequence[int] | Mapping[int, int], sort_keys: SortKeys | None) -> None:
        self.h = hashes  # spread hashes, signed int32
        self.sk = sort_keys
        self.cap = 0
        self.bins: dict[int, list[int] | _Node] = {}

    # -- comparisons ----------------------------------------------------------------------------------
    def _dir(self, k: int, p: _Node) -> int:
        """<= 0: key k goes left of p (hash as signed int, then compareTo; distinct keys never tie)."""
        h, ph = self.h[k], p.hash
        if ph > h:
            return -1
        if ph < h:
            return 1
        if self.sk is None:
            raise ValueError("two keys with the same hash met in a tree bin: sort keys are needed")
        a, b = self.sk[k], self.sk[p.key]
        if a == b:
            raise ValueError(f"keys {k} and {p.key} compare equal but are distinct")
        return -1 if a < b else 1

    # -- structure ------------------------------------------------------------------------------------
    def resize(self) -> None:
        if self.cap == 0:
            self.cap = _INITIAL_CAPACITY
            return
        old = self.cap
        self.cap = old * 2
        h = self.h
        new: dict[int, list[int] | _Node] = {}
        for j, b in self.bins.items():
            if type(b) is list:
                lo = [k for k in b if not h[k] & old]
                hi = [k for k in b if h[k] & old]
                if lo:
                    new[j] = lo
                if hi:
                    new[j + old] = hi
            else:
                self._split(new, b, j, old)  # type: ignore[arg-type]  # a bin that is no list is a _Node
        self.bins = new

    def insert_head(self, k: int) -> bool:
        """computeIfAbsent of a new key; True when treeifyBin asked for a resize (capacity < 64)."""
        i = self.h[k] & (self.cap - 1)
        b = self.bins.get(i)
        if b is None:
            self.bins[i] = [k]
            return False
        if type(b) is list:
            b.insert(0, k)
            if len(b) - 1 >= _TREEIFY_THRESHOLD - 1:
                return self._treeify_bin(i)
            return False
        self._put_tree(i, b, k)  # type: ignore[arg-type]  # a bin that is no list is a _Node
        return False

    def insert_tail(self, k: int) -> bool:
        """put of a new key; True when treeifyBin asked for a resize (capacity < 64)."""
        i = self.h[k] & (self.cap - 1)
        b = self.bins.get(i)
        if b is None:
            self.bins[i] = [k]
            return False
        if type(b) is list:
            b.append(k)
            if len(b) - 1 >= _TREEIFY_THRESHOLD:
                return self._treeify_bin(i)
            return False
        self._put_tree(i, b, k)  # type: ignore[arg-type]  # a bin that is no list is a _Node
        return False

    def _treeify_bin(self, i: int) -> bool:
        if self.cap < _MIN_TREEIFY_CAPACITY:
            return True
        keys = self.bins[i]
        head = self._link(keys)  # type: ignore[arg-type]  # a bin being treeified is a list
        self.bins[i] = head
        self._treeify(head, i, self.bins)
        return False

    def _link(self, keys: list[int]) -> _Node:
        prev = head = None
        for k in keys:
            x = _Node(k, self.h[k])
            x.prev = prev
            if prev is None:
                head = x
            else:
                prev.next = x
            prev = x
        assert head is not None
        return head

    def _treeify(self, head: _Node, i: int, bins: dict[int, list[int] | _Node]) -> None:
        root: _Node | None = None
        x: _Node | None = head
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    d = self._dir(x.key, p)
                    xp = p
                    p = p.left if d <= 0 else p.right  # type: ignore[assignment]  # None ends the loop
                    if p is None:
                        x.parent = xp
                        if d <= 0:
                            xp.left = x
                        else:
                            xp.right = x
                        root = _balance_insertion(root, x)
                        break
            x = nxt
        assert root is not None
        _move_root_to_front(bins, i, root)

    def _put_tree(self, i: int, first: _Node, k: int) -> None:
        root = first
        while root.parent is not None:
            root = root.parent
        p = root
        while True:
            d = self._dir(k, p)
            xp = p
            p = p.left if d <= 0 else p.right  # type: ignore[assignment]  # None ends the loop
            if p is None:
                xpn = xp.next
                x = _Node(k, self.h[k])
                x.next = xpn
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                xp.next = x
                x.parent = x.prev = xp
                if xpn is not None:
                    xpn.prev = x
                _move_root_to_front(self.bins, i, _balance_insertion(root, x))
                return

    def _split(self, new: dict[int, list[int] | _Node], b: _Node, j: int, bit: int) -> None:
        halves: list[list[_Node]] = [[], []]
        e: _Node | None = b
        while e is not None:
            halves[1 if e.hash & bit else 0].append(e)
            e = e.next
        lo, hi = halves
        for nodes, index, other in ((lo, j, hi), (hi, j + bit, lo)):
            if not nodes:
                continue
            if len(nodes) <= _UNTREEIFY_THRESHOLD:
                new[index] = [x.key for x in nodes]
                continue
            prev = None
            for x in nodes:  # relink as in split: prev = previous node of this half, next cleared
                x.prev = prev
                x.next = None
                if prev is not None:
                    prev.next = x
                prev = x
            new[index] = nodes[0]
            if other:
                self._treeify(nodes[0], index, new)

    def order(self) -> list[int]:
        out: list[int] = []
        for i in sorted(self.bins):
            b = self.bins[i]
            if type(b) is list:
                out.extend(b)
            else:
                x: _Node | None = b  # type: ignore[assignment]  # a bin that is no list is a _Node
                while x is not None:
                    out.append(x.key)
                    x = x.next
        return out


def _move_root_to_front(bins: dict[int, list[int] | _Node], i: int, root: _Node) -> None:
    first = bins[i]
    if root is not first:
        bins[i] = root
        rp, rn = root.prev, root.next
        if rn is not None:
            rn.prev = rp
        if rp is not None:
            rp.next = rn
        first.prev = root  # type: ignore[union-attr]  # root's bin is a tree: its first is a _Node
        root.next = first  # type: ignore[assignment]  # root's bin is a tree: its first is a _Node
        root.prev = None


def _spread_u32(hashes: Sequence[int] | np.ndarray) -> np.ndarray:
    u = (np.asarray(hashes, dtype=np.int64) & _M32).astype(np.uint32)
    return u ^ (u >> np.uint32(16))


def simulate_computeifabsent(hashes: Sequence[int] | np.ndarray, sort_keys: SortKeys | None = None, *,
                             trailing_call: bool) -> list[int]:
    """Iteration order after one computeIfAbsent per new key (in order), by simulating every call."""
    h = _spread_u32(hashes).view(np.int32).tolist()
    t = _Table(h, sort_keys)
    size = 0
    for k in range(len(h)):
        if t.cap == 0 or size > _threshold(t.cap):
            t.resize()
        if t.insert_head(k):
            t.resize()
        size += 1
    if trailing_call and size and size > _threshold(t.cap):
        t.resize()
    return t.order()


def put_order(hashes: Sequence[int] | np.ndarray, sort_keys: SortKeys | None = None) -> list[int]:
    """Iteration order after one `put` per new key (in order): tail insertion, resize after insertion."""
    h = _spread_u32(hashes).view(np.int32).tolist()
    t = _Table(h, sort_keys)
    for k in range(len(h)):
        if t.cap == 0:
            t.resize()
        if t.insert_tail(k):
            t.resize()
        if k + 1 > _threshold(t.cap):  # ++size > threshold
            t.resize()
    return t.order()


def _schedule(hu: np.ndarray, trailing_call: bool) -> tuple[list[int], list[int], int]:
    """Capacity in force when each key is inserted, as (stage starts, stage capacities), and the final one.

    Below capacity 64 a bin reaching 8 keys doubles the table (treeifyBin), so the first few keys are
    walked one by one; from 64 on growth depends on the size only."""
    n = len(hu)
    starts, caps = [0], [_INITIAL_CAPACITY]
    cap = _INITIAL_CAPACITY
    first = hu[:64].tolist()
    m = 0
    while m < n and cap < _MIN_TREEIFY_CAPACITY:
        if m > _threshold(cap):
            cap *= 2
            starts.append(m)
            caps.append(cap)
        mask = cap - 1
        here = first[m] & mask
        if cap < _MIN_TREEIFY_CAPACITY and sum(1 for j in range(m) if first[j] & mask == here) >= 7:
            cap *= 2
            starts.append(m + 1)
            caps.append(cap)
        m += 1
    while True:
        m = max(m, _threshold(cap) + 1)  # first size that makes a call resize
        if m >= n:
            break
        cap *= 2
        starts.append(m)
        caps.append(cap)
    final = cap * 2 if trailing_call and n > _threshold(cap) else cap
    return starts, caps, final


def computeifabsent_order(hashes: Sequence[int] | np.ndarray, sort_keys: SortKeys | None = None, *,
                          trailing_call: bool) -> np.ndarray:
    """Iteration order (int64 array of key indices) after one computeIfAbsent per new key, in order.

    List bins only ever see head insertions and order-keeping splits, so their final order is "bucket at
    the final capacity, then most recent key first". A bin can only have become a tree if, at some
    capacity >= 64, its bucket held >= 8 of the keys inserted by the end of that stage; the keys of the
    coarsest such buckets ("tainted") are simulated on the map's capacity schedule, which is exact since
    they never share a bin with other keys once it matters.
    """
    hu = _spread_u32(hashes)
    n = len(hu)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts, caps, final = _schedule(hu, trailing_call)
    ends = starts[1:] + [n]

    tainted: np.ndarray | None = None
    families: dict[int, set[int]] = {}  # capacity → buckets whose keys are all simulated
    for cap, lo, hi in zip(caps, starts, ends):
        if cap < _MIN_TREEIFY_CAPACITY or hi <= lo:
            continue
        counts = np.bincount(hu[:hi] & np.uint32(cap - 1))
        if counts.max() < _TREEIFY_THRESHOLD:
            continue
        fresh = [b for b in np.flatnonzero(counts >= _TREEIFY_THRESHOLD).tolist()
                 if not any(b & (c - 1) in fam for c, fam in families.items())]  # else an ancestor covers it
        if not fresh:
            continue
        families[cap] = set(fresh)
        hit = np.isin(hu & np.uint32(cap - 1), np.asarray(fresh, dtype=np.uint32))
        tainted = hit if tainted is None else tainted | hit

    bucket = (hu & np.uint32(final - 1)).astype(np.int64)
    rank = np.arange(n - 1, -1, -1, dtype=np.int64)  # most recent first
    if tainted is not None:
        keys = np.flatnonzero(tainted)
        signed = hu.view(np.int32)
        t = _Table(dict(zip(keys.tolist(), signed[keys].tolist())), sort_keys)
        for k in keys.tolist():
            need = caps[bisect_right(starts, k) - 1]
            while t.cap < need:
                t.resize()
            t.insert_head(k)  # a resize it asks for is already in the schedule
        while t.cap < final:
            t.resize()
        sim = np.asarray(t.order(), dtype=np.int64)
        rank[sim] = np.arange(len(sim), dtype=np.int64)  # tainted buckets hold only tainted keys
    return np.argsort((bucket << 32) | rank)  # keys are unique: no stable sort needed
