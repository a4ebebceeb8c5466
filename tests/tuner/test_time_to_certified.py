"""bench/time_to_certified.py: a study's launch, certification and other seconds, from the lines of its tune.log."""

from bench.time_to_certified import events, spans

LOG = """### H200 call of 2026-12-03T23:50Z
[23:50:00] [trial -] resolved settings: {}
[23:50:05] [trial 0] baseline (vLLM defaults)
[23:55:05] [trial 0] rate 60.00/s for 18 s: met
[23:55:06] [trial -] 1/4 finished
[23:55:30] [trial predict] --predict: launching predicted 63.439 req/s
[23:55:31] [trial 1] config {}
[23:59:01] [trial 1] rate 64.63/s for 20 s: met
[23:59:10] [trial predict] --predict: no more launches
not a timed line
### H200 call of 2026-12-04T00:01Z
[00:01:00] [trial -] resolved settings: {}
[00:01:10] [trial certify 1] starting vLLM
[00:05:10] [trial certify 1] soak at 64.628 req/s for 92 s: held
"""


def test_each_phase_is_its_lines_span_and_calls_are_counted_apart():
    evs = events(LOG)
    assert [e.call for e in evs] == [0] * 8 + [1] * 3
    got = spans(evs)
    assert got["launch 0"] == 300 and got["launch 1"] == 210 and got["certification"] == 240
    assert got["tune calls"] == 550 + 250  # 23:50:00-23:59:10, then 00:01:00-00:05:10 past midnight
    assert got["rest (call starts, rankings, refits)"] == 800 - 300 - 210 - 240
