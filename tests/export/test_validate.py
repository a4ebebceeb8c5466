"""Each export format checked by a real validator (see data/README.md), on every committed GPU study.

- kubernetes: ``kubernetes-validate --strict`` (Kubernetes' own JSON schemas, shipped in the package);
- kserve: python-jsonschema against KServe's InferenceService CRD schema (pinned), made strict;
- helm: python-jsonschema against production-stack's values.schema.json (pinned) as the chart ships it
  (what Helm enforces), and made strict with the two keys its templates read but its schema omits;
- compose: ``check-jsonschema --builtin-schema vendor.compose-spec``, and ``docker-compose config``
  where Debian's docker-compose is installed (it needs no Docker engine).
Each validator is also shown to reject a broken document, so none of these can pass by accepting anything.
"""

from __future__ import annotations

import functools
import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from export_data import DATA, HELP, ROOT, committed_gpu_studies

from tests.conftest import require
from tuner.export.formats import export_study

STUDIES = committed_gpu_studies()
HELP_026 = str(HELP["0.26.0"])
Completed = subprocess.CompletedProcess[str]


@functools.cache  # one import in a child per module and worker, not one per call (~0.3-1 s each)
def _has(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=300)


def strict(schema: Any) -> Any:
    """kubeconform's --strict: objects that list properties accept no others (unless marked open)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            if not out.get("x-kubernetes-preserve-unknown-fields"):
                out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def pinned_schema(name: str) -> Any:
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


def schema_errors(schema: Any, text: str) -> list[str]:
    """python-jsonschema (in-process: check-jsonschema takes ~10 s per call on the 640 kB KServe schema)."""
    require(_has("jsonschema"), "jsonschema (pip install 'slotune[dev]')")
    import jsonschema

    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)(schema)
    return [
        f"{list(e.absolute_path)}: {e.message}" for doc in yaml.safe_load_all(text) for e in validator.iter_errors(doc)
    ]


def helm_schema(strict_keys: bool) -> Any:
    schema = pinned_schema("production-stack-values.schema.json.gz")
    if not strict_keys:
        return schema
    # read by the chart's templates at the pinned commit, absent from its values.schema.json:
    # modelSpec.pvcExistingClaimName (templates/pvc.yaml, deployment-vllm-multi.yaml) and a probe's
    # timeoutSeconds (templates/_helpers.tpl chart.templateProbe)
    engine = schema["properties"]["servingEngineSpec"]["properties"]
    engine["modelSpec"]["items"]["properties"]["pvcExistingClaimName"] = {"type": "string"}
    engine["readinessProbe"]["properties"]["timeoutSeconds"] = {"type": "integer"}
    return strict(schema)


def check_jsonschema(schema: list[str], docs: list[Path]) -> subprocess.CompletedProcess[str]:
    """check-jsonschema over several files at once, its report as JSON (``-v``: with the files that passed)."""
    require(_has("check_jsonschema"), "check-jsonschema (pip install 'slotune[dev]')")
    return _run(sys.executable, "-m", "check_jsonschema", *schema, "-v", "-o", "json", *map(str, docs))


def kubernetes_validate(docs: list[Path]) -> subprocess.CompletedProcess[str]:
    require(_has("kubernetes_validate"), "kubernetes-validate (pip install 'slotune[dev]')")
    return _run(sys.executable, "-m", "kubernetes_validate", "--strict", *map(str, docs))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _broken(text: str, change) -> str:  # noqa: ANN001 - a function that edits the parsed documents
    docs = list(yaml.safe_load_all(text))
    change(docs)
    return yaml.safe_dump_all(docs, sort_keys=False)


@dataclass(frozen=True)
class Validated:
    """One validator's run over every committed study's file and one broken file (one start, not one per file;
    the broken file shows the same run rejecting what it must)."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str

    def doc(self, study: Path) -> Path:
        return self.folder / f"{study.name}.yaml"

    @property
    def bad(self) -> Path:
        return self.folder / "bad.yaml"

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _validated(tmp_path: Path, fmt: str, bad: str, run: Callable[[list[Path]], Completed]) -> Validated:
    """Export every committed study as ``fmt`` into ``tmp_path``, add ``bad.yaml``, run the validator once."""
    docs = [_write(tmp_path, f"{s.name}.yaml", export_study(ROOT / s, fmt, vllm_help=HELP_026)) for s in STUDIES]
    result = run([*docs, _write(tmp_path, "bad.yaml", bad)])
    return Validated(tmp_path, result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def kubernetes_run(tmp_path_factory: pytest.TempPathFactory) -> Validated:
    text = export_study(ROOT / STUDIES[0], "kubernetes", vllm_help=HELP_026)
    bad = _broken(text, lambda d: d[0]["spec"]["template"]["spec"]["containers"][0].update(readinesProbe={}))
    return _validated(tmp_path_factory.mktemp("kubernetes"), "kubernetes", bad, kubernetes_validate)


def kubernetes_lines(run: Validated, doc: Path) -> list[str]:
    """kubernetes-validate's lines about one file (``INFO <file> passed ...``, ``ERROR <file> ...``)."""
    return [line for line in run.stdout.splitlines() if line.split(" ", 2)[1:2] == [str(doc)]]


@pytest.mark.parametrize("study", STUDIES, ids=str)
def test_kubernetes_manifests_validate(study: Path, kubernetes_run: Validated) -> None:
    lines = kubernetes_lines(kubernetes_run, kubernetes_run.doc(study))
    # the Deployment and the Service, both validated, and nothing else said about this file
    assert len(lines) == 2 and all(x.startswith(f"INFO {kubernetes_run.doc(study)} passed") for x in lines), (
        kubernetes_run.output
    )


def test_kubernetes_validator_rejects_a_typo(kubernetes_run: Validated) -> None:
    lines = kubernetes_lines(kubernetes_run, kubernetes_run.bad)
    assert kubernetes_run.returncode != 0, kubernetes_run.output
    assert any(x.startswith(f"ERROR {kubernetes_run.bad}") and "readinesProbe" in x for x in lines), (
        kubernetes_run.output
    )


@pytest.mark.parametrize("study", STUDIES, ids=str)
def test_kserve_inference_service_validates(study: Path) -> None:
    schema = strict(pinned_schema("kserve-inferenceservice-v1beta1.schema.json.gz"))
    assert schema_errors(schema, export_study(ROOT / study, "kserve", vllm_help=HELP_026)) == []


def test_kserve_schema_rejects_a_typo() -> None:
    schema = strict(pinned_schema("kserve-inferenceservice-v1beta1.schema.json.gz"))
    text = export_study(ROOT / STUDIES[0], "kserve", vllm_help=HELP_026)
    bad = _broken(text, lambda d: d[0]["spec"]["predictor"].update(minReplica=1))
    assert any("minReplica" in e for e in schema_errors(schema, bad))
    wrong_type = _broken(text, lambda d: d[0]["spec"]["predictor"].update(minReplicas="one"))
    assert any("minReplicas" in e for e in schema_errors(schema, wrong_type))


def _helm_studies() -> list[Path]:
    from tuner.export.study import read_study

    return [s for s in STUDIES if read_study(ROOT / s).config.enable_prefix_caching is not None]


@pytest.mark.parametrize("study", _helm_studies(), ids=str)
def test_helm_values_validate_against_the_chart_schema(study: Path) -> None:
    text = export_study(ROOT / study, "helm", vllm_help=HELP_026)
    assert schema_errors(helm_schema(strict_keys=False), text) == []
    assert schema_errors(helm_schema(strict_keys=True), text) == []


def test_helm_schema_rejects_a_wrong_type() -> None:
    text = export_study(ROOT / _helm_studies()[0], "helm", vllm_help=HELP_026)
    bad = _broken(text, lambda d: d[0]["servingEngineSpec"]["modelSpec"][0]["vllmConfig"].update(extraArgs="--x"))
    assert any("extraArgs" in e for e in schema_errors(helm_schema(strict_keys=False), bad))
    typo = _broken(text, lambda d: d[0]["servingEngineSpec"]["modelSpec"][0].update(requestGPUs=1))
    assert any("requestGPUs" in e for e in schema_errors(helm_schema(strict_keys=True), typo))


@pytest.fixture(scope="module")
def compose_run(tmp_path_factory: pytest.TempPathFactory) -> Validated:
    text = export_study(ROOT / STUDIES[0], "compose", vllm_help=HELP_026)
    bad = _broken(text, lambda d: next(iter(d[0]["services"].values())).update(entrypiont=["python3"]))
    schema = ["--builtin-schema", "vendor.compose-spec"]
    return _validated(tmp_path_factory.mktemp("compose"), "compose", bad, lambda docs: check_jsonschema(schema, docs))


def compose_report(run: Validated, doc: Path) -> tuple[bool, list[str]]:
    """Whether check-jsonschema listed ``doc`` among the files that passed, and its errors about it."""
    report = json.loads(run.stdout)  # the files that passed: "successes" when one failed, else "checked_paths"
    passed = report.get("successes", report.get("checked_paths", []))
    errors = [
        e["message"] for e in report.get("errors", []) + report.get("parse_errors", []) if e["filename"] == str(doc)
    ]
    return str(doc) in passed, errors


@pytest.mark.parametrize("study", STUDIES, ids=str)
def test_compose_file_validates(study: Path, compose_run: Validated) -> None:
    assert compose_report(compose_run, compose_run.doc(study)) == (True, []), compose_run.output


def test_compose_schema_rejects_a_typo(compose_run: Validated) -> None:
    passed, errors = compose_report(compose_run, compose_run.bad)
    assert compose_run.returncode != 0 and not passed and any("entrypiont" in e for e in errors), compose_run.output


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is not installed")
def test_docker_compose_reads_the_file_as_written(tmp_path: Path, write_study) -> None:
    from export_data import tiny_best

    study = write_study(tiny_best({"model": "/models/$USER/tiny", "tensor_parallel_size": 2}))
    path = _write(tmp_path, "compose.yaml", export_study(study, "compose", vllm_help=HELP_026))
    result = _run("docker-compose", "-f", str(path), "config")
    assert result.returncode == 0, result.stderr
    service = yaml.safe_load(result.stdout)["services"]["tiny"]
    # not interpolated: `config` prints the literal `$` escaped again, as a Compose file must hold it
    assert service["volumes"][0]["source"] == "/models/$$USER/tiny"
    assert service["command"][service["command"].index("--tensor-parallel-size") + 1] == "2"
    assert service["deploy"]["resources"]["reservations"]["devices"][0]["count"] == 2
    broken = _write(tmp_path, "bad.yaml", path.read_text().replace("ipc: host", "ipcc: host"))
    assert _run("docker-compose", "-f", str(broken), "config").returncode != 0
