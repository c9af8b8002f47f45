"""``Chip.relayout_pieces`` moves cores in chunks (bounded bookkeeping) and copies pieces
whose offsets agree on every core as slices: against a per-element reference of the
instruction's definition, on random piece tables (uniform and per-core offsets, boxes
clipped by either buffer, tiles partly outside the tensor), with tiny chunks."""

import itertools

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from irc.interpreter import chip as chip_module
from irc.interpreter.chip import Chip, ChipFault


def reference(source, written, target_shape, pieces, piece_shape, origins, shape):
    """The definition, element by element: None when it is a fault."""
    cores, rank = len(pieces), len(shape)
    result = np.zeros((cores, *target_shape), dtype=source.dtype)
    count = np.zeros((cores, *target_shape), dtype=np.int64)
    for c in range(cores):
        for k in range(pieces.shape[1]):
            s, at, to = pieces[c, k, 0], pieces[c, k, 1:1 + rank], pieces[c, k, 1 + rank:]
            if not 0 <= s < len(source):
                return None
            for e in itertools.product(*(range(n) for n in piece_shape)):
                a, t = at + np.array(e), to + np.array(e)
                if (a < 0).any() or (a >= source.shape[1:]).any() or (t < 0).any() or (t >= target_shape).any():
                    continue
                if not written[s]:
                    return None
                result[(c, *t)] = source[(s, *a)]
                count[(c, *t)] += 1
        for t in itertools.product(*(range(n) for n in target_shape)):
            inside = all(0 <= o + i < n for o, i, n in zip(origins[c], t, shape))
            if inside and count[(c, *t)] != 1:
                return None
            if not inside:
                result[(c, *t)] = 0
    return result


def _run(source_data, written, target_shape, pieces, piece_shape, origins, shape, chunk):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chip_module, "PIECE_CHUNK", chunk)
        return _relayout(source_data, written, target_shape, pieces, piece_shape, origins, shape)


def _relayout(source_data, written, target_shape, pieces, piece_shape, origins, shape):
    chip = Chip("tiny16")
    cores = len(pieces)
    source = chip.alloc("S", source_data.shape[1:], np.float32, len(source_data), 0, "s")
    target = chip.alloc("T", target_shape, np.float32, cores, 4096, "t")
    source.data[...] = source_data
    source.written[:] = written
    chip.relayout_pieces(source, target, pieces, piece_shape, origins, shape, 8, 1, "here:", setup=False)
    return target.data


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_chunked_pieces_match_the_definition(data):
    rank = data.draw(st.integers(1, 2))
    cores = data.draw(st.integers(1, 6))
    senders = data.draw(st.integers(1, 4))
    source_shape = tuple(data.draw(st.integers(1, 4)) for _ in range(rank))
    target_shape = tuple(data.draw(st.integers(1, 4)) for _ in range(rank))
    piece_shape = tuple(data.draw(st.integers(1, n)) for n in target_shape)
    count = data.draw(st.integers(1, 3))
    uniform = data.draw(st.booleans())
    offset = st.integers(-1, 3)
    pieces = np.zeros((cores, count, 1 + 2 * rank), dtype=np.int64)
    for k in range(count):
        pieces[:, k, 0] = data.draw(st.lists(st.integers(0, senders - 1), min_size=cores, max_size=cores))
        if uniform:
            pieces[:, k, 1:] = [data.draw(offset) for _ in range(2 * rank)]
        else:
            pieces[:, k, 1:] = [[data.draw(offset) for _ in range(2 * rank)] for _ in range(cores)]
    shape = tuple(data.draw(st.integers(1, 8)) for _ in range(rank))
    origins = np.array([[data.draw(st.integers(0, 8)) for _ in range(rank)] for _ in range(cores)], dtype=np.int64)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    source = rng.standard_normal((senders, *source_shape)).astype(np.float32)
    written = np.array(data.draw(st.lists(st.booleans(), min_size=senders, max_size=senders)))
    written[:] |= data.draw(st.booleans())
    expected = reference(source, written, target_shape, pieces, piece_shape, origins, shape)
    chunk = data.draw(st.sampled_from([1, 3, 7, 1 << 22]))
    event("fault" if expected is None else "moved")
    if expected is None:
        with pytest.raises(ChipFault, match=r"^here: "):
            _run(source, written, target_shape, pieces, piece_shape, origins, shape, chunk)
    else:
        got = _run(source, written, target_shape, pieces, piece_shape, origins, shape, chunk)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("chunk", [1, 5, 1 << 22])
def test_a_setup_of_whole_boxes_and_a_split_copy(chunk):
    """Valid tables: every core copies its whole 3x4 box from another core (a weight's
    setup: uniform offsets), and each receives two halves from two cores at per-core
    source offsets; tiles past the tensor's end are zero."""
    rng = np.random.default_rng(0)
    source = rng.standard_normal((4, 3, 4)).astype(np.float32)
    written = np.ones(4, dtype=bool)
    whole = np.zeros((4, 1, 5), dtype=np.int64)
    whole[:, 0, 0] = [3, 2, 1, 0]
    origins = np.array([[0, 0], [3, 0], [0, 4], [3, 4]])
    expected = reference(source, written, (3, 4), whole, (3, 4), origins, (6, 8))
    assert expected is not None
    np.testing.assert_array_equal(
        _run(source, written, (3, 4), whole, (3, 4), origins, (6, 8), chunk), source[::-1])
    halves = np.zeros((4, 2, 5), dtype=np.int64)
    halves[:, 0] = [[c, c % 2, 0, 0, 0] for c in range(4)]          # rows 0-1 from row c % 2 of core c
    halves[:, 1] = [[3 - c, 0, 0, 2, 0] for c in range(4)]          # row 2 from row 0 of core 3 - c
    expected = reference(source, written, (3, 4), halves, (2, 4), origins, (5, 8))
    assert expected is not None and (expected[1, 2] == 0).all()      # core 1's row 2 lies past row 4
    np.testing.assert_array_equal(
        _run(source, written, (3, 4), halves, (2, 4), origins, (5, 8), chunk), expected)
