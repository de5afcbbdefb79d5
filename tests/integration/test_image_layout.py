"""deploy/Dockerfile's image, proven without a container engine: the venv it builds
(/opt/kubesched: kubesched and a plugin package, from the files the Dockerfile copies)
is built here, and `kubesched run` from it, on PATH, schedules with the plugin against
the real control plane, configured in-cluster: KUBERNETES_SERVICE_HOST/PORT and the
ServiceAccount's token and CA at the fixed path /var/run/secrets/kubernetes.io/
serviceaccount (which kubernetes_asyncio's in-cluster loader reads), as in a pod.

That path is made real for the kubesched process only: it runs in a user and mount
namespace of its own (`unshare --user --map-root-user --mount`) where a tmpfs covers
/run (/var/run links to it) and holds the token files; the venv is bind-mounted
read-only there, as the Deployment's readOnlyRootFilesystem would have it. kubesched's
code is unchanged: no test-only setting points it anywhere.

The dependencies the Dockerfile downloads (pinned by requirements.lock) come from the
environment running the tests (tests/packaging/venvs.py), since tests reach no index.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from kubesched_team_plugins.team_nodes import REASON

from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import DEPLOY_DIR, REPO_ROOT, ControlPlane, free_port
from tests.integration.kube_scheduler_proc import stop_process
from tests.packaging.venvs import PLUGIN_PACKAGE, make_venv, pip_install, source_copy

pytestmark = pytest.mark.integration

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched"


def dockerfile_copies() -> list[str]:
    """The files the Dockerfile's build stage copies from the repository."""
    text = (DEPLOY_DIR / "Dockerfile").read_text()
    sources: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--") for w in words):
            sources += words[1:-1]
    return sources


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/opt/kubesched as the Dockerfile builds it: a venv with kubesched (not editable,
    from the copied sources) and the plugin package."""
    root = tmp_path_factory.mktemp("image")
    src = root / "src"
    src.mkdir()
    for name in dockerfile_copies():
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, src / name)
    venv = root / "opt" / "kubesched"
    pip_install(make_venv(venv), src, source_copy(PLUGIN_PACKAGE, root))
    return venv


def test_the_dockerfile_copies_what_the_build_needs() -> None:
    assert {"requirements.lock", "pyproject.toml", "README.md", "LICENSE", "src"} <= set(
        dockerfile_copies()
    )
    text = (DEPLOY_DIR / "Dockerfile").read_text()
    assert re.search(r"^ARG PLUGIN_PACKAGES", text, re.M)
    assert "--constraint requirements.lock /src ${PLUGIN_PACKAGES}" in text
    assert re.search(r"^ENV PATH=/opt/kubesched/bin:\$\{PATH\}", text, re.M)
    assert re.search(r"^USER 65532:65532$", text, re.M)


def test_kubesched_runs_from_the_image_venv_in_cluster(
    image_venv: Path, control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    """What `docker build -f deploy/Dockerfile --build-arg PLUGIN_PACKAGES=...
    --build-context plugins=...` makes (docs/how-to/deploy.md), run as the Deployment
    runs it. No container engine runs on the project's machines, so the image's venv is
    built here by the Dockerfile's own steps (the image_venv fixture), with the plugin
    package the build context names."""
    api.apply_file(DEPLOY_DIR / "rbac.yaml")
    api.request("DELETE", LEASE, ok=(404,))
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    (secrets / "token").write_text(api.create_token("kube-system", "kubesched"))
    shutil.copy2(control_plane.ca_cert, secrets / "ca.crt")
    (secrets / "namespace").write_text("kube-system")

    # deploy/config.yaml's configuration, with the plugin package's plugins enabled.
    configmap = next(d for d in yaml.safe_load_all((DEPLOY_DIR / "config.yaml").read_text()) if d)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    plugins = yaml.safe_load((PLUGIN_PACKAGE / "example" / "scheduler-config.yaml").read_text())
    config["profiles"] = plugins["profiles"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    url = urlsplit(control_plane.url)
    port = free_port()
    home = tmp_path / "home"  # no ~/.kube/config: in-cluster is the only way in
    home.mkdir()
    script = "; ".join(
        [
            "set -e",
            "mount -t tmpfs tmpfs /run",
            f"mkdir -p {SA_DIR}",
            f"cp {shlex.quote(str(secrets))}/* {SA_DIR}/",
            f"mount --bind {shlex.quote(str(image_venv))} {shlex.quote(str(image_venv))}",
            f"mount -o remount,bind,ro {shlex.quote(str(image_venv))}",
            f"exec kubesched run --config {shlex.quote(str(tmp_path / 'config.yaml'))}"
            f" --secure-port {port} --bind-address 127.0.0.1 -v 2",
        ]
    )
    env = {
        "PATH": f"{image_venv / 'bin'}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": str(home),
        "KUBERNETES_SERVICE_HOST": str(url.hostname),
        "KUBERNETES_SERVICE_PORT": str(url.port),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "kubesched.log"
    red = unique_name("red")
    api.create_node(unique_name("spot"), labels={"example.com/capacity-type": "spot"})
    api.create_node(red, labels={"example.com/team": "red"})
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def log() -> str:
        return log_path.read_text(errors="replace")

    try:
        api.wait_for(lambda: "became leader" in log() or proc.poll() is not None, timeout=60)
        assert proc.poll() is None, log()[-3000:]
        api.create_pod(namespace, "batch", cpu="100m")
        api.create_pod(
            namespace, "intruder", cpu="100m", nodeSelector={"kubernetes.io/hostname": red}
        )
        api.wait_for(lambda: api.node_of(namespace, "batch"), timeout=30)
        api.wait_for(
            lambda: any(
                reason == "FailedScheduling" and REASON in message
                for _, reason, message in api.events_for(namespace, "intruder")
            ),
            timeout=30,
        )
        assert api.node_of(namespace, "intruder") is None
        # The kubesched that ran is the venv's, with the plugins of its entry points.
        assert (
            f"{image_venv}/lib/"
            in subprocess.run(
                [
                    image_venv / "bin" / "python",
                    "-c",
                    "import kubesched; print(kubesched.__file__)",
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
        )
        assert "forbidden" not in log().lower()
    finally:
        code = stop_process(proc, 40)
    assert code == 0, log()[-3000:]
