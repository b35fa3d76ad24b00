"""course.text: the capstone's corpus is deterministic, round-trips through the vocabulary, and its batches are
the shifted windows they claim to be; bad input fails with a message that says what was wrong."""
from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

from course import text


def test_splitmix64_matches_the_published_reference_stream():
    # The first outputs of SplitMix64 seeded with 0 (the reference C code of Steele, Lea and Flood, as used to
    # seed xoshiro): if the Python port drifted, every corpus and batch would change with it.
    rng = text.SplitMix64(0)
    assert [rng.next_u64() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_below_is_uniform_enough_and_in_range():
    rng = text.SplitMix64(7)
    draws = np.array([rng.below(5) for _ in range(20_000)])
    assert draws.min() == 0 and draws.max() == 4
    counts = np.bincount(draws, minlength=5)
    assert np.all(np.abs(counts - 4000) < 4 * np.sqrt(4000)), counts     # within four standard deviations


def test_the_generator_uses_no_version_dependent_randomness():
    # Determinism across Python and NumPy versions rests on this: the corpus and the batch starts come only from
    # SplitMix64 in Python ints, never from `random`, NumPy's generators or hash().
    tree = ast.parse(inspect.getsource(text))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert "random" not in imported and "random" not in names and "default_rng" not in names
    assert "hash" not in names


def test_corpus_is_deterministic_sized_and_in_the_vocabulary():
    a = text.corpus()
    text.corpus.cache_clear()
    b = text.corpus()
    assert a == b
    assert 100_000 <= len(a) < 101_000                  # whole paragraphs: at most one paragraph over
    assert set(a) <= set(text.VOCAB)
    assert a.endswith("\n") and "  " not in a
    assert text.corpus(5_000, seed=1) != text.corpus(5_000, seed=0)
    assert text.corpus(200_000).startswith(a[:50_000])  # a longer corpus continues the same stream


def test_corpus_has_enough_variety_to_learn_from():
    c = text.corpus()
    sentences = [s for s in c.replace("\n", " ").split(". ") if s]
    assert len(set(sentences)) > 0.8 * len(sentences)   # mostly distinct sentences: not memorisable
    words = c.replace("\n", " ").replace(".", "").replace(",", "").split()
    assert 100 < len(set(words)) < 300                  # a small vocabulary of words: learnable


def test_encode_decode_round_trip():
    c = text.corpus(20_000)
    ids = text.encode(c)
    assert ids.dtype == np.int64 and ids.shape == (len(c),)
    assert text.decode(ids) == c
    assert text.decode(ids.tolist()) == c
    assert ids[0] == text.VOCAB.index(c[0]) and text.encode("\n ,.az").tolist() == [0, 1, 2, 3, 4, 29]
    assert text.encode("").shape == (0,) and text.decode([]) == ""


def test_encode_and_decode_reject_bad_input_with_a_clear_message():
    with pytest.raises(ValueError, match=r"character 'Q' at position 4 is not in the vocabulary"):
        text.encode("the Qgradient")
    with pytest.raises(TypeError, match="takes a str"):
        text.encode(b"bytes")
    with pytest.raises(ValueError, match=r"id 30 at position 1 is outside the vocabulary \[0, 30\)"):
        text.decode([1, 30])
    with pytest.raises(ValueError, match=r"id -1 at position 0"):
        text.decode(np.array([-1]))
    with pytest.raises(ValueError, match="1-D sequence of integer ids"):
        text.decode(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="1-D sequence of integer ids"):
        text.decode([0.5, 1.0])


def test_batches_are_shifted_windows_of_the_data():
    data = text.encode(text.corpus(10_000))
    it = text.batches(data, block=16, batch=8, seed=3)
    for _ in range(5):
        x, y = next(it)
        assert x.shape == y.shape == (8, 16) and x.dtype == y.dtype == np.int64
        assert np.array_equal(x[:, 1:], y[:, :-1])     # y is x moved on by one character
        for row_x, row_y in zip(x, y):                  # each row is a contiguous window of the data
            starts = np.flatnonzero(np.all(np.lib.stride_tricks.sliding_window_view(data, 17) ==
                                           np.concatenate([row_x, row_y[-1:]]), axis=1))
            assert starts.size >= 1


def test_batches_are_deterministic_and_seeded():
    data = np.arange(1000, dtype=np.int64)              # token i at position i: a window reveals its start
    first = [next(text.batches(data, 10, 4, seed=5)) for _ in range(2)]
    assert np.array_equal(first[0][0], first[1][0])
    a, b = text.batches(data, 10, 4, seed=5), text.batches(data, 10, 4, seed=6)
    xs_a = np.concatenate([next(a)[0] for _ in range(50)])
    xs_b = np.concatenate([next(b)[0] for _ in range(50)])
    assert not np.array_equal(xs_a, xs_b)
    assert xs_a[:, 0].min() >= 0 and xs_a[:, 0].max() <= 1000 - 11   # every start leaves room for the last target


def test_batches_reach_the_last_start_and_accept_the_shortest_data():
    data = np.arange(11, dtype=np.int32)                # block 10: exactly one start, 0
    x, y = next(text.batches(data, 10, 3))
    assert x.dtype == np.int64 and np.array_equal(x, np.tile(np.arange(10), (3, 1)))
    assert np.array_equal(y, np.tile(np.arange(1, 11), (3, 1)))
    starts = {int(next(text.batches(np.arange(13), 10, 1, seed=s))[0][0, 0]) for s in range(60)}
    assert starts == {0, 1, 2}


def test_batches_reject_bad_input_with_a_clear_message():
    data = np.arange(20)
    with pytest.raises(ValueError, match=r"too short for blocks of 20 tokens.*needs at least 21"):
        next(text.batches(data, 20, 2))
    with pytest.raises(ValueError, match="block must be a positive int"):
        next(text.batches(data, 0, 2))
    with pytest.raises(ValueError, match="batch must be a positive int"):
        next(text.batches(data, 4, 2.0))
    with pytest.raises(ValueError, match="1-D integer token array"):
        next(text.batches(data.astype(float), 4, 2))
    with pytest.raises(ValueError, match="1-D integer token array"):
        next(text.batches(data.reshape(4, 5), 4, 2))


def test_split_keeps_order_and_rejects_bad_fractions():
    data = np.arange(100)
    train, val = text.split(data, 0.9)
    assert np.array_equal(np.concatenate([train, val]), data) and len(train) == 90
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            text.split(data, bad)


def test_corpus_rejects_a_bad_size():
    with pytest.raises(ValueError, match="positive int"):
        text.corpus(0)
    with pytest.raises(TypeError, match="seed must be an int"):
        text.corpus(100, seed=1.5)
