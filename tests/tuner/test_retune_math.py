from tuner.retune import good_share


def test_good_share_counts_failed_requests_as_not_good():
    assert good_share({"requests_ok": 8, "requests_failed": 2, "requests_good": 6}) == 0.6
    assert good_share(None) == 0.0 and good_share({"requests_ok": 0, "requests_failed": 0}) == 0.0
