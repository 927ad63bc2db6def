"""The token bucket that large pages take turns on (proxy_addon.pacing), against answers worked by hand."""

from __future__ import annotations

import pytest

from proxy_addon.pacing import LARGE_PAGE, Pacer

MB = 1_000_000


def test_pages_under_the_large_size_never_wait_nor_take_from_the_bucket():
    pacer = Pacer(rate=1 * MB, burst=0)
    assert all(pacer.delay(LARGE_PAGE - 1, now=0.0) == 0 for _ in range(100))
    assert pacer.delay(LARGE_PAGE, now=0.0) == pytest.approx(LARGE_PAGE / MB)  # the bucket was still full


def test_a_run_of_large_pages_waits_its_turn_past_the_burst():
    # rate 1 MB/s, burst 2 MB: each page of 1,048,576 bytes takes 1.048576 s of the bucket
    pacer = Pacer(rate=1 * MB, burst=2 * MB)
    waits = [pacer.delay(LARGE_PAGE, now=0.0) for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.097152, 1.145728, 2.194304])
    # the fifth, asking 1 s later, waits 1 s less than it would have at 0
    assert pacer.delay(LARGE_PAGE, now=1.0) == pytest.approx(3.24288 - 1.0)


def test_the_bucket_fills_again_while_no_large_page_comes():
    pacer = Pacer(rate=1 * MB, burst=2 * MB)
    for _ in range(3):
        pacer.delay(LARGE_PAGE, now=0.0)
    assert pacer.delay(LARGE_PAGE, now=10.0) == 0.0
    assert pacer.delay(LARGE_PAGE, now=10.0) == pytest.approx(0.097152)


def test_a_page_larger_than_the_burst_waits_even_alone():
    pacer = Pacer(rate=2 * MB, burst=1 * MB)
    assert pacer.delay(3 * MB, now=5.0) == pytest.approx(1.0)  # (3 MB - 1 MB) / 2 MB/s


@pytest.mark.parametrize("rate, burst", [(0, 1), (-1, 1), (1, -1)])
def test_a_rate_must_be_positive_and_a_burst_not_negative(rate, burst):
    with pytest.raises(ValueError):
        Pacer(rate, burst)
