import pytest

from tuner.errors import ProfileError, UsageError
from tuner.settings.fields import FIELDS
from tuner.settings.project import read_project_file, render_project_file
from tuner.settings.tune_settings import resolve


def test_flags_override_file_override_defaults(tmp_path):
    f = tmp_path / "slotune.yaml"
    f.write_text("model: ./m\ngpu: a30\nslo: ttft_p95=2s\ntrials: 7\nworkload: code\n")
    values = read_project_file(f)
    assert values["model"] == str((tmp_path / "m").resolve())
    s = resolve(values, {"gpu": "h200", "trials": None, "seed": None}, source=str(f))
    assert (s.gpu, s.trials, s.workload, s.seed) == ("h200", 7, "code", 0)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("model: ./m\ntrails: 3\n", "slotune.yaml:2: unknown key 'trails'"),
        ("model: ./m\ntrials: many\n", "slotune.yaml:2: key 'trials' 'many': must be a whole number from 1 to"),
        ("slo: ttft_p95=fast\n", "slotune.yaml:1: key 'slo' 'ttft_p95=fast': malformed SLO"),
        ("- a\n- b\n", "must be a mapping"),
        ("trials: 0\n", "key 'trials' 0: must be a whole number from 1 to 100000; e.g. trials: 20"),
        ("level_seconds: -5\n", "key 'level_seconds' -5.0: must be a number of seconds > 0"),
        ("level_seconds: .nan\n", "key 'level_seconds' nan: must be a number of seconds > 0"),
        ("gpu: a30\ngpu: h200\n", "slotune.yaml:2: not valid YAML: key 'gpu' appears twice"),
        ("a: &x [1]\nb: *x\n", "slotune.yaml:2: not valid YAML: alias \\*x is not allowed"),
        ("gpu: !!python/object:os.system x\n", "slotune.yaml:1: not valid YAML: could not determine a constructor"),
    ],
)
def test_bad_file_names_file_line_and_key(tmp_path, text, needle):
    f = tmp_path / "slotune.yaml"
    f.write_text(text)
    with pytest.raises(ProfileError, match=needle):
        read_project_file(f)


def test_missing_model_is_a_usage_error():
    with pytest.raises(UsageError, match="missing --model"):
        resolve({}, {"gpu": "a30", "slo": "ttft_p95=2s"})


def test_init_template_round_trips(tmp_path):
    f = tmp_path / "slotune.yaml"
    f.write_text(render_project_file({"model": "/abs/m", "gpu": "a30", "slo": "ttft_p95=2s"}))
    values = read_project_file(f)
    assert values["model"] == "/abs/m" and values["gpu"] == "a30" and values["trials"] == FIELDS["trials"].default
    for key, field in FIELDS.items():  # every key is documented in the template
        assert field.help in f.read_text(), key
