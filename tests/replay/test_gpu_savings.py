"""The savings replay's GPU sizing: the seed rule per card, worked out by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brain.savings.gpu import replayed_gpus

CARD_MIB = 40960


@pytest.mark.parametrize(
    ("allocated", "util", "memory_mib", "gpus"),
    [
        (4, 0.30, 4 * 8000, 2),  # 4 x 0.30 / 0.9 = 1.33 -> 2
        (2, 0.80, 44000, 2),  # 2 x 0.80 / 0.9 = 1.78 -> 2
        (8, 0.10, 8 * 4000, 1),  # 8 x 0.10 / 0.9 = 0.89 -> 1
        (4, 0.10, 3.5 * CARD_MIB, 4),  # memory fills 3.5 cards -> 4 whatever the compute
        (4, 0.05, 2.2 * CARD_MIB, 3),  # 4 x 0.55 / 0.9 = 2.44 -> 3
        (1, 0.02, 100, 1),  # at least one card
    ],
)
def test_cards_from_mean_utilization_and_peak_memory(allocated, util, memory_mib, gpus):
    assert replayed_gpus(allocated, util, memory_mib, allocated * CARD_MIB) == gpus


def test_without_gpu_series_a_run_keeps_its_cards():
    assert replayed_gpus(4, None, None, None) == 4
    assert replayed_gpus(4, None, 1000, None) == 4  # memory without the cards' total
    assert replayed_gpus(0, 0.5, 100, 1000) == 0


def test_the_target_is_configurable():
    assert replayed_gpus(4, 0.3, 0, 4 * CARD_MIB, target=0.6) == 2  # 4 x 0.3 / 0.6 = 2
    assert replayed_gpus(4, 0.3, 0, 4 * CARD_MIB, target=0.3) == 4


@given(
    allocated=st.integers(1, 16),
    util=st.floats(0, 1),
    memory=st.floats(0, 1),
    target=st.floats(0.1, 1),
)
def test_never_more_than_it_had_never_fewer_than_its_memory(allocated, util, memory, target):
    total = allocated * CARD_MIB
    gpus = replayed_gpus(allocated, util, memory * total, total, target)
    assert 1 <= gpus <= allocated and gpus == int(gpus)
    assert gpus >= min(allocated, math.ceil(allocated * memory - 1e-9))
