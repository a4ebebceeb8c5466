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

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from export_data import DATA, HELP, ROOT, committed_gpu_studies

from tests.conftest import require
from tuner.export.formats import export_study

STUDIES = committed_gpu_studies()
HELP_026 = str(HELP["0.26.0"])


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


def check_jsonschema(schema: list[str], doc: Path) -> subprocess.CompletedProcess[str]:
    require(_has("check_jsonschema"), "check-jsonschema (pip install 'slotune[dev]')")
    return _run(sys.executable, "-m", "check_jsonschema", *schema, str(doc))


def kubernetes_validate(doc: Path) -> subprocess.CompletedProcess[str]:
    require(_has("kubernetes_validate"), "kubernetes-validate (pip install 'slotune[dev]')")
    return _run(sys.executable, "-m", "kubernetes_validate", "--strict", str(doc))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _broken(text: str, change) -> str:  # noqa: ANN001 - a function that edits the parsed documents
    docs = list(yaml.safe_load_all(text))
    change(docs)
    return yaml.safe_dump_all(docs, sort_keys=False)


@pytest.mark.parametrize("study", STUDIES, ids=str)
def test_kubernetes_manifests_validate(study: Path, tmp_path: Path) -> None:
    text = export_study(ROOT / study, "kubernetes", vllm_help=HELP_026)
    result = kubernetes_validate(_write(tmp_path, "k8s.yaml", text))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("INFO") == 2  # the Deployment and the Service, both validated


def test_kubernetes_validator_rejects_a_typo(tmp_path: Path) -> None:
    text = export_study(ROOT / STUDIES[0], "kubernetes", vllm_help=HELP_026)
    bad = _broken(text, lambda d: d[0]["spec"]["template"]["spec"]["containers"][0].update(readinesProbe={}))
    result = kubernetes_validate(_write(tmp_path, "bad.yaml", bad))
    assert result.returncode != 0 and "readinesProbe" in result.stdout + result.stderr


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


@pytest.mark.parametrize("study", STUDIES, ids=str)
def test_compose_file_validates(study: Path, tmp_path: Path) -> None:
    doc = _write(tmp_path, "compose.yaml", export_study(ROOT / study, "compose", vllm_help=HELP_026))
    result = check_jsonschema(["--builtin-schema", "vendor.compose-spec"], doc)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_schema_rejects_a_typo(tmp_path: Path) -> None:
    text = export_study(ROOT / STUDIES[0], "compose", vllm_help=HELP_026)
    bad = _broken(text, lambda d: next(iter(d[0]["services"].values())).update(entrypiont=["python3"]))
    result = check_jsonschema(["--builtin-schema", "vendor.compose-spec"], _write(tmp_path, "bad.yaml", bad))
    assert result.returncode != 0 and "entrypiont" in result.stdout


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
