"""End to end, scaled down (issue 21, "done when"): headroom watch, real
Prometheus with the shipped rules and real Alertmanager paging a webhook. From
a steady state a tmpfs fills at a fixed rate: the page must arrive well before
it is full, and the resolution soon after the space is freed. The same harness
with the shipped settings is bench/watch-e2e/run (results in docs/watch.md)."""
from __future__ import annotations

from pathlib import Path

from alert_stack import Settings, describe, measure
from conftest import require_root


def test_the_page_comes_before_full_and_the_resolution_after_freeing(scratch: Path, headroom):
    require_root()
    # Every duration divided by about 12 from the shipped ones: a 20 s window
    # (eta_min_span 5 s), scrapes and evaluations every second, `for: 5s`.
    settings = Settings(interval="200ms", window="20s", scrape="1s", evaluation="1s",
                        rule_for="5s", group_wait="1s", group_interval="1s", size_mib=64,
                        steady_seconds=5, fill_seconds=40, hold_seconds=3, linger_seconds=20)
    result = measure(scratch, settings)
    print(describe(result))
    assert result.page is not None, describe(result)
    # The budget: eta_min_span (5 s) + for (5 s) + a scrape, an evaluation and
    # group_wait (3 s) after the fill starts, so 40 s - 13 s = 27 s before full; at
    # least 20 s of it must remain.
    assert result.page_before_full >= 20, describe(result)
    assert result.daemon_page is not None and result.daemon_page < result.page, describe(result)
    # Freed: the estimate restarts at once; 3 clear samples, an evaluation, a group_interval.
    assert result.resolve_after_free is not None, describe(result)
    assert 0 < result.resolve_after_free < 6, describe(result)
    assert result.daemon_resolved is not None and result.daemon_resolved - result.freed < 2, \
        describe(result)
