import pytest

from loadtest.slo import SLO, SLOError, format_slos, parse_slos


def test_parse_units_and_percentiles():
    slos = parse_slos("ttft_p95=2s,tpot_p99=80ms,e2e_p99.9=10s,itl_p50=150ms")
    assert slos == (SLO("ttft", 95, 2000), SLO("tpot", 99, 80), SLO("e2e", 99.9, 10000), SLO("itl", 50, 150))
    assert [s.key for s in slos] == ["ttft_p95", "tpot_p99", "e2e_p99.9", "itl_p50"]
    assert parse_slos(format_slos(slos)) == slos


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("ttft_p95=fast", "malformed SLO 'ttft_p95=fast'"),
        ("foo=1s", "unknown SLO metric 'foo'"),
        ("foo_p95=1s", "unknown SLO metric 'foo'"),
        ("ttft_p40=1s", "out of range"),
        ("ttft_p95=2s,ttft_p95=1s", "given twice"),
        ("ttft_p95=2h", "malformed"),
        ("", "empty SLO"),
    ],
)
def test_bad_slos_name_the_part(bad, needle):
    with pytest.raises(SLOError, match=needle.replace("(", r"\(")):
        parse_slos(bad)


def test_met_by():
    slo = SLO("ttft", 95, 2000)
    assert slo.met_by(2000) and not slo.met_by(2000.1) and not slo.met_by(None)
