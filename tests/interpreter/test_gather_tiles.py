"""``gather_tiles`` (loads, relayouts) picks tiles through a strided view of the host tensor
when their origins lie on a grid, overlapping windows included (a padded step tile reads
two rows of its neighbour's range): against the element-by-element definition, zeros
outside the tensor."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from irc.interpreter.chip import gather_tiles


def reference(host, origins, shape):
    out = np.zeros((len(origins), *shape), dtype=host.dtype)
    for c, origin in enumerate(origins):
        for e in itertools.product(*(range(s) for s in shape)):
            at = tuple(int(o + i) for o, i in zip(origin, e))
            if all(0 <= x < h for x, h in zip(at, host.shape)):
                out[(c, *e)] = host[at]
    return out


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_tiles_match_the_definition(data):
    rank = data.draw(st.integers(1, 3))
    host_shape = tuple(data.draw(st.integers(1, 8)) for _ in range(rank))
    shape = tuple(data.draw(st.integers(1, 4)) for _ in range(rank))
    cores = data.draw(st.integers(0, 6))
    if data.draw(st.booleans()):   # on a grid (the common case), possibly overlapping
        step = [data.draw(st.integers(1, 4)) for _ in range(rank)]
        origins = [[data.draw(st.integers(0, 3)) * t for t in step] for _ in range(cores)]
    else:
        origins = [[data.draw(st.integers(-2, 8)) for _ in range(rank)] for _ in range(cores)]
    origins = np.array(origins, dtype=np.int64).reshape(cores, rank)
    host = np.random.default_rng(cores).standard_normal(host_shape).astype(np.float32)
    np.testing.assert_array_equal(gather_tiles(host, origins, shape, cores), reference(host, origins, shape))


def test_a_replicated_load_keeps_each_tile_once_until_read_whole():
    """``Buffer.data`` of a replicated load: the distinct tiles stored once, every core's
    copy made on the first whole read; a loop's window reads (``rows``) make none."""
    from irc.interpreter.chip import Chip

    chip = Chip("tiny16")
    host = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    origins = np.array([[r, c] for _ in range(2) for r in (0, 4) for c in (0, 3)])   # 4 tiles, each twice
    buffer = chip.alloc("B", (4, 3), np.float32, 8, 0, "test")
    chip.load(buffer, host, origins, "test")
    assert buffer.copies is not None and buffer.stored.shape == (4, 4, 3)
    rows, which = buffer.rows(np.arange(8))
    np.testing.assert_array_equal(rows[which], reference(host, origins, (4, 3)))
    assert buffer.copies is not None                      # reading rows made no copies
    np.testing.assert_array_equal(buffer.data, reference(host, origins, (4, 3)))
    assert buffer.copies is None and buffer.stored.shape == (8, 4, 3)
