"""A bounded cache for one configuration at a time, keyed by the objects a value was computed from (a system, a
model, a calibration: records that do not hash cheaply) and by scalars.

    cache = ObjectCache(maxsize)
    cache.get((system, arch), (pp, dtype), make)    # make() once per key; the value comes back read-only

An entry holds its objects, so an id is never reused while it is kept; when full, the oldest entry goes first.
Values are shared by every caller: numpy arrays (alone or as a dict's values) are made read-only, so a caller
that changes one in place fails instead of changing the next caller's answer. Safe on a sweep's threads: a
look-up reads the dict as it is, a store (and the eviction it may need) holds a lock.

Does not: cache sweeps (callers skip the cache when a key field is an array).
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np


class ObjectCache:
    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._entries: dict = {}
        self._lock = threading.Lock()

    def get(self, objects: tuple, scalars: tuple, make: Callable):
        key = (*map(id, objects), *scalars)
        hit = self._entries.get(key)
        if hit is not None:  # the entry holds its objects: no other live object has their ids
            return hit[1]
        value = _read_only(make())
        with self._lock:  # another thread's store would change the dict under the eviction's iterator
            if len(self._entries) >= self.maxsize:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = (tuple(objects), value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _read_only(value):
    for v in value.values() if isinstance(value, dict) else (value,):
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    return value
