"""The single-configuration cache (core.object_cache): hits only for the very objects, read-only values, bounded."""

import numpy as np
import pytest

from perfmodel.core.object_cache import ObjectCache


class Rec:  # a record compared by identity, as the cache keys systems and models
    pass


def test_a_value_is_made_once_per_objects_and_scalars_and_shared_read_only():
    cache, made = ObjectCache(4), []
    a, b = Rec(), Rec()

    def make():
        made.append(1)
        return {"x": np.arange(3.0), "y": 2.0}
    first = cache.get((a,), ("bf16",), make)
    assert cache.get((a,), ("bf16",), make) is first and len(made) == 1
    cache.get((b,), ("bf16",), make), cache.get((a,), ("fp8",), make)  # another object, another scalar: made again
    assert len(made) == 3
    with pytest.raises(ValueError):  # a caller cannot change the next caller's answer
        first["x"][0] = 9.0


def test_the_oldest_entry_goes_when_full():
    cache, objs = ObjectCache(2), [Rec() for _ in range(3)]
    for o in objs:
        cache.get((o,), (), lambda: 1.0)
    made = []
    cache.get((objs[0],), (), lambda: made.append(1) or 1.0)  # evicted: made again
    cache.get((objs[2],), (), lambda: made.append(1) or 1.0)  # kept
    assert made == [1]
