"""deploy/extender/ (kube-scheduler-extended) for the integration tests: its paths and
names, rendering it (kubectl kustomize, helm template --set extender.enabled=true),
a kubeconfig holding a ServiceAccount's token, and the pod's two containers run as
processes on the test control plane (PodProcesses), from the rendered Deployment and
ConfigMap.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.integration.control_plane import DEPLOY_DIR, ControlPlane
from tests.integration.kube_scheduler_proc import stop_process
from tests.integration.kubesched_proc import KubeschedProcess

EXTENDER_DIR = DEPLOY_DIR / "extender"
CHART = DEPLOY_DIR / "helm" / "kubesched"
NAME = "kube-scheduler-extended"
NAMESPACE = "kube-system"
CONFIGMAP = f"{NAME}-config"
EXTENDER_CONTAINER = "kubesched-extender"
SCHEDULER_CONTAINER = "kube-scheduler"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# The render's kinds, sorted (as test_deploy_render's `kinds`): the ServiceAccount, the
# extender's ClusterRole, three ClusterRoleBindings (system:kube-scheduler,
# system:volume-scheduler, the extender's), the Lease's Role, two RoleBindings (the
# Lease, extension-apiserver-authentication-reader), the ConfigMap, the Deployment.
EXTENDER_KINDS = sorted(
    [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ]
)


def run(*command: str | Path, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], input=stdin, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done.stdout


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def only(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def is_extenders(obj: Mapping[str, Any]) -> bool:
    """One of kube-scheduler-extended's objects (not kubesched's, in the chart)."""
    labels = obj["metadata"].get("labels") or {}
    return bool(labels.get("app.kubernetes.io/name") == NAME)


def render_kustomize(kubectl: Path) -> str:
    return run(kubectl, "kustomize", EXTENDER_DIR)


def render_helm(helm: Path, *args: str, namespace: str = NAMESPACE) -> str:
    return run(
        helm,
        "template",
        "kubesched",
        CHART,
        "--namespace",
        namespace,
        "--set",
        "extender.enabled=true",
        *args,
    )


def token_kubeconfig(cp: ControlPlane, token: str, path: Path) -> Path:
    """A kubeconfig for the cluster that authenticates with TOKEN only."""
    ca = base64.b64encode(cp.ca_cert.read_bytes()).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": cp.url, "certificate-authority-data": ca}}
                ],
                "users": [{"name": "sa", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "sa"}}],
                "current-context": "c",
            }
        )
    )
    return path


def with_ports(text: str, ports: Mapping[int, int]) -> str:
    """TEXT with each of the fixed ports (a whole number) replaced by its free one."""
    for fixed, free in ports.items():
        text = re.sub(rf"(?<!\d){fixed}(?!\d)", str(free), text)
    return text


def flag(command: list[str], name: str) -> tuple[int, str]:
    """(index of the value, value) of --NAME VALUE or --NAME=VALUE in COMMAND."""
    for i, arg in enumerate(command):
        if arg == name:
            return i + 1, command[i + 1]
        if arg.startswith(f"{name}="):
            return i, arg.split("=", 1)[1]
    raise AssertionError(f"{name} not in {command}")


def containers(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in (*pod.get("initContainers", []), *pod["containers"])}


def mounted_config(pod: Mapping[str, Any], configmap: Mapping[str, Any], container: str) -> str:
    """The text of the file CONTAINER's --config names, found as the kubelet would
    mount it: the container's volumeMount, the volume's ConfigMap and item, the key."""
    c = containers(pod)[container]
    path = Path(flag(c["command"], "--config")[1])
    (mount,) = [m for m in c["volumeMounts"] if Path(m["mountPath"]) == path.parent]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    (item,) = [i for i in volume["configMap"]["items"] if i["path"] == path.name]
    text: str = configmap["data"][item["key"]]
    return text


@dataclass
class PodProcesses:
    """The pod's containers as processes: ``extender`` (a KubeschedProcess) and
    ``scheduler`` (kube-scheduler's Popen, serving on ``scheduler_port``), with the
    probes as the kubelet would run them: the extender's exec commands and
    kube-scheduler's HTTPS paths, by probe name."""

    extender: KubeschedProcess
    scheduler: subprocess.Popen[bytes]
    scheduler_log: Path
    scheduler_port: int
    exec_probes: dict[str, list[str]]
    http_probes: dict[str, str]
    env: dict[str, str]

    def scheduler_log_text(self) -> str:
        try:
            return self.scheduler_log.read_text(errors="replace")
        except OSError:
            return ""

    def logs(self) -> str:
        return (
            f"--- extender ---\n{self.extender.log()[-3000:]}\n"
            f"--- kube-scheduler ---\n{self.scheduler_log_text()[-3000:]}"
        )

    def extender_probe(self, name: str) -> bool:
        """Whether the extender's probe NAME (its exec command) passes now."""
        done = subprocess.run(
            self.exec_probes[name], env=self.env, capture_output=True, text=True, timeout=10
        )
        return done.returncode == 0

    def scheduler_probe(self, name: str) -> bool:
        """Whether kube-scheduler's probe NAME (an HTTPS GET) passes now."""
        return _http_probe_ok(self.scheduler_port, self.http_probes[name])


def _probe_until_ok(
    command: list[str], env: Mapping[str, str], proc: KubeschedProcess, timeout: float
) -> None:
    """Run an exec probe's COMMAND until it exits 0, as the kubelet would."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        done = subprocess.run(command, env=dict(env), capture_output=True, text=True, timeout=10)
        if done.returncode == 0:
            return
        last = (done.stderr.strip().splitlines() or [""])[-1]
        if proc.proc.poll() is not None or time.monotonic() >= deadline:
            raise AssertionError(f"probe {command} failed ({last}):\n{proc.log()[-3000:]}")
        time.sleep(0.3)


def _http_probe_ok(port: int, path: str) -> bool:
    try:
        return httpx.get(f"https://127.0.0.1:{port}{path}", verify=False, timeout=2).is_success
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def run_pod(
    cp: ControlPlane,
    pod: Mapping[str, Any],
    configmap: Mapping[str, Any],
    kubeconfig: Path,
    ports: Mapping[int, int],
    workdir: Path,
) -> Iterator[PodProcesses]:
    """Start the rendered pod's two containers, from their commands and the files the
    ConfigMap mounts, changed only as a process outside a pod needs:

    * the credentials: KUBECONFIG (a ServiceAccount's token) where the pod would use
      its in-cluster token: `--kubeconfig` for the extender, and for kube-scheduler
      clientConnection.kubeconfig in its file (with --config it ignores --kubeconfig);
    * the ports: each fixed port of PORTS (10259, 10260) replaced by a free one in the
      commands, the files and the probes alike (kube-scheduler's urlPrefix follows the
      extender's --secure-port), as this machine may run other schedulers;
    * the programs: `kubesched` is this interpreter's `-m kubesched.cli.main`, `python`
      this interpreter, `kube-scheduler` the binary the control plane was built with.

    The extender starts first and kube-scheduler once the extender's startup probe (its
    exec command, run here) passes, as the kubelet orders a native sidecar; kube-scheduler
    is ready when its readiness probe's GET answers 200. Both are stopped on exit."""
    spec = containers(pod)
    sidecar, scheduler = spec[EXTENDER_CONTAINER], spec[SCHEDULER_CONTAINER]
    assert sidecar.get("restartPolicy") == "Always"  # a native sidecar, started first
    # No KUBECONFIG nor in-cluster variables: only the given kubeconfig is used.
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        env.pop(k, None)
    pid_files: list[Path] = []

    # The extender.
    ext_dir = workdir / EXTENDER_CONTAINER
    ext_dir.mkdir(parents=True)
    ext_config = ext_dir / "config.yaml"
    ext_config.write_text(with_ports(mounted_config(pod, configmap, EXTENDER_CONTAINER), ports))
    command = [with_ports(a, ports) for a in sidecar["command"]]
    assert command[0] == "kubesched"
    i, _ = flag(command, "--config")
    command[i] = f"--config={ext_config}" if command[i].startswith("--config=") else str(ext_config)
    command = [sys.executable, "-m", "kubesched.cli.main", *command[1:]]
    command += ["--kubeconfig", str(kubeconfig)]
    extender_port = int(flag(command, "--secure-port")[1])
    log_path = ext_dir / "extender.log"
    with log_path.open("wb") as out:
        popen = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    extender = KubeschedProcess(popen, log_path, extender_port, cp)
    pid_file = cp.dir / f"kubesched-extender-{extender_port}.pid"
    pid_file.write_text(f"{popen.pid}\n")
    pid_files.append(pid_file)

    def probe(name: str) -> list[str]:
        argv = [with_ports(a, ports) for a in sidecar[name]["exec"]["command"]]
        assert argv[0] == "python"
        return [sys.executable, *argv[1:]]

    scheduler_proc: subprocess.Popen[bytes] | None = None
    try:
        _probe_until_ok(probe("startupProbe"), env, extender, timeout=60)

        # kube-scheduler.
        ks_dir = workdir / SCHEDULER_CONTAINER
        ks_dir.mkdir(parents=True)
        config = yaml.safe_load(
            with_ports(mounted_config(pod, configmap, SCHEDULER_CONTAINER), ports)
        )
        assert not (config.get("clientConnection") or {}).get("kubeconfig")  # in-cluster
        config["clientConnection"] = {
            **config.get("clientConnection", {}),
            "kubeconfig": str(kubeconfig),
        }
        ks_config = ks_dir / "config.yaml"
        ks_config.write_text(yaml.safe_dump(config, sort_keys=False))
        args = [with_ports(a, ports) for a in scheduler["command"]]
        assert args[0] == "kube-scheduler"
        i, _ = flag(args, "--config")
        args[i] = f"--config={ks_config}" if args[i].startswith("--config=") else str(ks_config)
        args[0] = str(cp.binary("kube-scheduler"))
        ports_by_name = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
        scheduler_port = ports[ports_by_name["https"]]
        assert flag(args, "--secure-port")[1] == str(scheduler_port)
        scheduler_log = ks_dir / "kube-scheduler.log"
        with scheduler_log.open("wb") as out:
            scheduler_proc = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        pid_file = cp.dir / f"kube-scheduler-{scheduler_port}.pid"
        pid_file.write_text(f"{scheduler_proc.pid}\n")
        pid_files.append(pid_file)
        http_probes = {}
        for name in ("livenessProbe", "readinessProbe"):
            get = scheduler[name]["httpGet"]
            assert (get["port"], get["scheme"]) == ("https", "HTTPS"), name
            http_probes[name] = get["path"]
        processes = PodProcesses(
            extender,
            scheduler_proc,
            scheduler_log,
            scheduler_port,
            {name: probe(name) for name in ("startupProbe", "livenessProbe", "readinessProbe")},
            http_probes,
            env,
        )
        deadline = time.monotonic() + 30
        while not processes.scheduler_probe("readinessProbe"):
            if scheduler_proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"kube-scheduler not ready:\n{processes.logs()}")
            time.sleep(0.2)
        yield processes
    finally:
        if scheduler_proc is not None:
            stop_process(scheduler_proc, 10)
        extender.stop()
        for pid_file in pid_files:
            with contextlib.suppress(OSError):
                pid_file.unlink()


__all__ = [
    "CHART",
    "CONFIGMAP",
    "EXTENDER_CONTAINER",
    "EXTENDER_DIR",
    "EXTENDER_KINDS",
    "NAME",
    "NAMESPACE",
    "RBAC_KINDS",
    "SCHEDULER_CONTAINER",
    "PodProcesses",
    "containers",
    "docs",
    "flag",
    "is_extenders",
    "mounted_config",
    "only",
    "render_helm",
    "render_kustomize",
    "run",
    "run_pod",
    "token_kubeconfig",
    "with_ports",
]
