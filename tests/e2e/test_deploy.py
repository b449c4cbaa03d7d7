"""The deployment manifests in deploy/, checked without a cluster or a Docker engine (neither runs
here, and nothing is pulled): the Kubernetes ones rendered by `kubectl kustomize`, the Compose file
read. Each Hindsight container's environment is a valid configuration of the server, in its
role; the API pods' probes, drain and autoscaling fit together; the Compose topology is the one
deploy/local-cluster.sh runs."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hindsight.config import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="module")
def kube() -> dict:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    out = subprocess.run(
        [kubectl, "kustomize", str(DEPLOY / "kubernetes")], capture_output=True, text=True, check=True
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    return {
        (
            d["kind"],
            d["metadata"]["name"].rsplit("-", 1)[0] if d["kind"] in ("ConfigMap", "Secret") else d["metadata"]["name"],
        ): d
        for d in docs
    }


def _environment(kube: dict, container: dict) -> dict:
    """The container's environment as the pod gets it: its ConfigMap and Secret, then its own env."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(kube[("ConfigMap", "hindsight-config")]["data"])
        if "secretRef" in source:
            secret = kube[("Secret", "hindsight-database")]["data"]
            env.update({k: base64.b64decode(v).decode() for k, v in secret.items()})
    env.update({e["name"]: e["value"] for e in container.get("env", [])})
    return env


def test_kubernetes_manifests_render_and_fit_together(kube):
    kinds = sorted({kind for kind, _ in kube})
    assert kinds == sorted(
        {"Namespace", "ConfigMap", "Secret", "Service", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    )
    api = kube[("Deployment", "hindsight-api")]
    worker = kube[("Deployment", "hindsight-worker")]
    for deployment, role in ((api, "api"), (worker, "worker")):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        settings = load_settings(_environment(kube, container))  # unknown or invalid settings raise
        assert settings.role == role
        assert settings.read_database_urls and settings.migration_database_url
        assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
        assert container["livenessProbe"]["httpGet"]["path"] == "/health/live"
        assert container["startupProbe"]["httpGet"]["path"] == "/health/live"
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        pause = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        assert grace > pause + settings.shutdown_grace, "the pod is killed before it has drained"
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        budget = kube[("PodDisruptionBudget", deployment["metadata"]["name"])]
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # The API leaves the Service before it drains; the worker is behind no Service.
    (api_container,) = api["spec"]["template"]["spec"]["containers"]
    assert api_container["lifecycle"]["preStop"]["sleep"]["seconds"] > 0
    service = kube[("Service", "hindsight-api")]
    assert service["spec"]["selector"].items() <= api["spec"]["template"]["metadata"]["labels"].items()
    hpa = kube[("HorizontalPodAutoscaler", "hindsight-api")]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "hindsight-api"}
    assert hpa["spec"]["minReplicas"] >= 2 and api_container["resources"]["requests"]["cpu"]
    # The database is outside the cluster, named by ExternalName Services the URLs use.
    for name in ("db-primary", "db-replica"):
        assert kube[("Service", name)]["spec"]["type"] == "ExternalName"
    urls = _environment(kube, api_container)
    assert (
        "db-primary" in urls["HINDSIGHT_API_DATABASE_URL"] and "db-replica" in urls["HINDSIGHT_API_READ_DATABASE_URL"]
    )


def _compose_env(service: dict) -> dict:
    """A service's environment with `${VAR:-default}` as Compose fills it when VAR is unset."""
    return {k: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(v)) for k, v in service.get("environment", {}).items()}


def test_compose_file_is_the_clusters_topology():
    compose = yaml.safe_load((DEPLOY / "compose" / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {
        "postgres-primary",
        "postgres-replica",
        "pgbouncer-primary",
        "pgbouncer-replica",
        "api",
        "worker",
        "haproxy",
    }
    assert services["api"]["deploy"]["replicas"] == 3
    for name, role in (("api", "api"), ("worker", "worker")):
        settings = load_settings(_compose_env(services[name]))
        assert settings.role == role and settings.db_pool_mode == "transaction"
        assert (
            "pgbouncer-primary" in settings.database_url and "target_session_attrs=read-write" in settings.database_url
        )
        assert settings.read_database_urls == [settings.read_database_url]
        assert "postgres-primary" in (settings.migration_database_url or "")
    for volume in [v for s in services.values() for v in s.get("volumes", []) if v.startswith("./")]:
        assert (DEPLOY / "compose" / volume.split(":")[0]).exists(), volume
    for node in ("primary", "replica"):
        ini = (DEPLOY / "compose" / "pgbouncer" / f"{node}.ini").read_text()
        assert "pool_mode = transaction" in ini and f"host=postgres-{node}" in ini
    haproxy = (DEPLOY / "compose" / "haproxy.cfg").read_text()
    assert "uri /health/ready" in haproxy and "server-template api 3 api:8888" in haproxy
    assert "pg_basebackup" in (DEPLOY / "compose" / "postgres" / "replica.sh").read_text()
