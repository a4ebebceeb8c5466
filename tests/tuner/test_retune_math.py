from loadtest.summary import ReportSummary
from tuner.retune import good_share


def test_good_share_counts_failed_requests_as_not_good():
    assert good_share(ReportSummary(requests_ok=8, requests_failed=2, requests_good=6)) == 0.6
    assert good_share(None) == 0.0 and good_share(ReportSummary(requests_ok=0, requests_failed=0)) == 0.0


def test_verification_runs_below_the_edge_rate_by_the_tolerance():
    import pytest

    from tuner.errors import UsageError
    from tuner.retune import verification_rate

    assert verification_rate(20.0, 0.1) == pytest.approx(18.0)
    assert verification_rate(20.0, 0.0) == 20.0
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(UsageError, match="--tolerance"):
            verification_rate(20.0, bad)
