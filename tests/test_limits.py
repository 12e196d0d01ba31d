import pytest

from evalkit.config import AppConfig
from evalkit.limits import RateLimiter, check_allowed
from evalkit.ratings import RatingError


def test_rate_limit_per_rater_sliding_window():
    now = [0.0]
    lim = RateLimiter(3, clock=lambda: now[0])
    for _ in range(3):
        lim.check("ann")
    with pytest.raises(RatingError, match="too many submissions from 'ann'"):
        lim.check("ann")
    lim.check("bob")  # other raters are not affected
    now[0] = 61.0
    lim.check("ann")  # the window moved on


def test_zero_means_no_limit():
    lim = RateLimiter(0)
    for _ in range(1000):
        lim.check("ann")


def test_allow_list_by_name_and_org():
    open_app = AppConfig()
    check_allowed(open_app, "anyone")
    app = AppConfig(allowed_raters=["ann"], allowed_orgs=["acme"])
    check_allowed(app, "ann")
    check_allowed(app, "bob", orgs=["acme"])
    with pytest.raises(RatingError, match="not on this study's allow-list"):
        check_allowed(app, "mallory", orgs=["evil"])
