"""Issue #31, the CLI's conventions: `run` takes --plugin, --enable and --disable as
`simulate` does; `explain` names a pod as kubectl does (NAME with -n, or NS/NAME);
`run`'s start-up failures (a port in use, a kind the API server does not serve) are
one line and exit 1."""

from __future__ import annotations

import asyncio
import json
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner

from kubesched.api import kinds
from kubesched.cli.main import main
from kubesched.framework.interfaces import EXTENSION_POINTS
from kubesched.framework.profile import resolve
from kubesched.framework.state.dra import DraState
from kubesched.kube import runner as runner_module
from kubesched.kube.claims import DRA_KINDS, dra_informers
from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection
from kubesched.kube.runner import RunOptions
from kubesched.kube.startup_checks import (
    StartupError,
    coscheduling_needs,
    plugin_needs,
    require_served,
)

ROOT = Path(__file__).resolve().parents[2]
APP_POOL = f"{ROOT / 'examples' / 'plugins' / 'app_pool.py'}:AppPool"

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: first
- schedulerName: second
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
"""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[RunOptions]:
    """`run` as far as the options it hands the runner (nothing connects)."""
    seen: list[RunOptions] = []

    async def fake_run(options: RunOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(runner_module, "run", fake_run)
    return seen


def points_of(options: RunOptions) -> dict[str, dict[str, list[str]]]:
    config = options.scheduler_config
    assert config is not None and options.registry is not None
    return {
        p.scheduler_name: resolve(p, EXTENSION_POINTS, options.registry).points
        for p in config.profiles
    }


# --- 1. run --plugin / --enable / --disable ------------------------------------------


def test_run_enables_and_disables_plugins_in_the_default_profile(
    started: list[RunOptions],
) -> None:
    result = CliRunner().invoke(
        main,
        ["run", "--plugin", APP_POOL, "--enable", "AppPool", "--disable", "ImageLocality"],
    )
    assert result.exit_code == 0, result.output
    (points,) = points_of(started[0]).values()
    assert "AppPool" in points["filter"]
    assert "ImageLocality" not in points["score"]
    assert "NodeResourcesFit" in points["filter"]


def test_run_applies_them_to_every_profile_of_the_file(
    started: list[RunOptions], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(
        main,
        [
            *("run", "--config", str(config), "--plugin", APP_POOL),
            *("--enable", "AppPool", "--disable", "TaintToleration"),
        ],
    )
    assert result.exit_code == 0, result.output
    profiles = points_of(started[0])
    assert set(profiles) == {"first", "second"}
    for points in profiles.values():
        assert "AppPool" in points["filter"]
        assert "TaintToleration" not in points["filter"]
    # What the file said stays: only the options' plugins changed.
    assert "NodeResourcesBalancedAllocation" in profiles["first"]["score"]
    assert "NodeResourcesBalancedAllocation" not in profiles["second"]["score"]


@pytest.mark.parametrize(
    "args",
    [
        ["--enable", "ImageLocalty"],
        ["--disable", "ImageLocalty"],
        ["--enable", "ImageLocality:-1"],
        ["--plugin", "no_such_module:Nope"],
        ["--disable", "PrioritySort"],  # no queueSort left
    ],
)
def test_run_refuses_what_simulate_refuses_with_the_same_line(
    started: list[RunOptions], tmp_path: Path, args: list[str]
) -> None:
    manifest = tmp_path / "empty.yaml"
    manifest.write_text("")
    ran = CliRunner().invoke(main, ["run", *args])
    simulated = CliRunner().invoke(main, ["simulate", "-f", str(manifest), *args])
    assert ran.exit_code == simulated.exit_code == 2, ran.output
    assert "Traceback" not in ran.output
    assert not started

    def error(output: str) -> str:
        (line,) = [line for line in output.splitlines() if line.startswith("Error:")]
        return line

    # The same words, but for the default profiles' names.
    assert error(ran.output) == error(simulated.output).replace("default-scheduler", "kubesched")


def test_run_says_a_weight_on_a_plugin_without_score_does_nothing(
    started: list[RunOptions],
) -> None:
    result = CliRunner().invoke(main, ["run", "--plugin", APP_POOL, "--enable", "AppPool:3"])
    assert result.exit_code == 0, result.output
    assert "AppPool has no Score, its weight is ignored" in result.output


# --- 2. explain: -n/--namespace -------------------------------------------------------

MANIFESTS = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 200m}}}]}
"""


def explain(tmp_path: Path, *args: str) -> Any:
    path = tmp_path / "in.yaml"
    path.write_text(textwrap.dedent(MANIFESTS))
    return CliRunner().invoke(main, ["explain", *args, "-f", str(path), "-o", "json"])


@pytest.mark.parametrize(
    ("args", "pod"),
    [
        (["web-1", "-n", "shop"], "shop/web-1"),
        (["--namespace", "shop", "web-1"], "shop/web-1"),
        (["shop/web-1"], "shop/web-1"),
        (["shop/web-1", "-n", "shop"], "shop/web-1"),
        (["web-1"], "default/web-1"),  # kubectl's default namespace
    ],
)
def test_explain_names_a_pod_as_kubectl_does(tmp_path: Path, args: list[str], pod: str) -> None:
    result = explain(tmp_path, *args)
    assert result.exit_code == 0, result.output
    assert [p["pod"] for p in json.loads(result.stdout)["pods"]] == [pod]


def test_explain_refuses_a_namespace_that_conflicts_with_ns_name(tmp_path: Path) -> None:
    result = explain(tmp_path, "shop/web-1", "-n", "default")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [
        "Error: Invalid value for POD: shop/web-1 is in namespace 'shop', but "
        "-n/--namespace says 'default': give one of them"
    ]


def test_an_unknown_name_suggests_the_pods_of_that_name_elsewhere(tmp_path: Path) -> None:
    result = explain(tmp_path, "web-1", "-n", "shops")
    assert result.exit_code == 2
    assert "no pending pod shops/web-1 in the input; did you mean shop/web-1" in result.output


# --- 4. run's start-up failures -------------------------------------------------------


def test_a_secure_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """kube-scheduler: "failed to create listener: failed to listen on
    0.0.0.0:10259: listen tcp 0.0.0.0:10259: bind: address already in use", exit 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_against_fake_api(
            tmp_path, ["--secure-port", str(port), "--bind-address", "127.0.0.1"]
        )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [
        f"Error: failed to listen on 127.0.0.1:{port} (--secure-port, --bind-address): "
        "address already in use"
    ]


def test_a_health_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_against_fake_api(
            tmp_path,
            ["--secure-port", "0", "--health-port", str(port), "--health-address", "127.0.0.1"],
        )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [
        f"Error: failed to listen on 127.0.0.1:{port} (--health-port, --health-address): "
        "address already in use"
    ]


def write_kubeconfig(tmp_path: Path, url: str) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return kubeconfig


DRA_SERVED = {"/apis/resource.k8s.io/v1": [k.resource for k in DRA_KINDS]}


def run_against_fake_api(
    tmp_path: Path, args: list[str], served: dict[str, list[str]] = DRA_SERVED
) -> Any:
    """`run` against an API server that serves discovery only (the start-up checks
    come before anything is listed or watched): by default, the DRA kinds the
    default profile's DynamicResources needs."""
    with FakeApi(served) as api:
        kubeconfig = write_kubeconfig(tmp_path, api.url)
        return CliRunner().invoke(
            main,
            ["run", "--kubeconfig", str(kubeconfig), "--no-leader-elect", "--no-api-worker", *args],
        )


def test_a_kind_not_served_stops_run_in_one_line(tmp_path: Path) -> None:
    result = run_against_fake_api(tmp_path, ["--secure-port", "0"], served={})
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [
        "Error: plugin DynamicResources needs ResourceClaim (resource.k8s.io/v1 "
        "resourceclaims), which the API server does not serve: serve resource.k8s.io/v1 "
        "(kube-apiserver --runtime-config) or disable DynamicResources"
    ]
    # Disabled, it is not needed: run goes on, to the next check (a port in use).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        flags = ["--bind-address", "127.0.0.1", "--secure-port", port]
        result = run_against_fake_api(
            tmp_path, [*flags, "--disable", "DynamicResources"], served={}
        )
    assert result.exit_code == 1, result.output
    assert "does not serve" not in result.output
    assert "Error: failed to listen on 127.0.0.1:" in result.output


class FakeApi:
    """A plain-HTTP API server in a thread of its own that answers discovery:
    SERVED maps GROUP/VERSION paths to the resources listed there; others are 404."""

    def __init__(self, served: dict[str, list[str]]) -> None:
        import threading

        self.served = served
        self.requests: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.url = ""

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def handle(request: web.Request) -> web.Response:
            self.requests.append(request.path)
            resources = self.served.get(request.path)
            if resources is None:
                return web.json_response({"kind": "Status", "code": 404}, status=404)
            listed = [{"name": name} for name in resources]
            return web.json_response({"kind": "APIResourceList", "resources": listed})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        self.runner = runner
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> FakeApi:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def check(tmp_path: Path, url: str, needs: Any) -> None:
    async def go() -> None:
        client = KubeClient(await load_connection(str(write_kubeconfig(tmp_path, url))))
        try:
            await require_served(client, needs)
        finally:
            await client.aclose()

    asyncio.run(go())


def test_a_group_version_not_served_names_the_kind_the_plugin_and_the_fix(
    tmp_path: Path,
) -> None:
    with FakeApi({}) as api, pytest.raises(StartupError) as caught:
        check(tmp_path, api.url, coscheduling_needs())
    assert str(caught.value) == (
        "plugin Coscheduling needs PodGroup (scheduling.x-k8s.io/v1alpha1 podgroups), "
        "which the API server does not serve: install the CRD (kubectl apply -f "
        "deploy/crds/scheduling.x-k8s.io_podgroups.yaml) or disable Coscheduling"
    )
    assert api.requests == ["/apis/scheduling.x-k8s.io/v1alpha1"]


def test_a_resource_missing_from_a_served_group_version_is_refused_too(tmp_path: Path) -> None:
    served = {"/apis/resource.k8s.io/v1": ["resourceclaims", "deviceclasses"]}
    with FakeApi(served) as api, pytest.raises(StartupError) as caught:
        check(tmp_path, api.url, plugin_needs(DRA_KINDS, ["DynamicResources"]))
    assert str(caught.value).startswith(
        "plugin DynamicResources needs ResourceSlice (resource.k8s.io/v1 resourceslices), "
        "which the API server does not serve:"
    )
    # One discovery request for the three kinds of one group/version.
    assert api.requests == ["/apis/resource.k8s.io/v1"]


def test_served_kinds_pass_and_an_unanswered_check_is_no_verdict(tmp_path: Path) -> None:
    served = {"/apis/resource.k8s.io/v1": ["resourceclaims", "resourceslices", "deviceclasses"]}
    with FakeApi(served) as api:
        check(tmp_path, api.url, plugin_needs(DRA_KINDS, ["DynamicResources"]))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    # An API server that does not answer now: the informers retry, as upstream's do.
    check(tmp_path, f"http://127.0.0.1:{port}", coscheduling_needs())


def test_the_dra_kinds_checked_are_those_watched(tmp_path: Path) -> None:
    async def paths() -> set[str]:
        client = KubeClient(await load_connection(str(write_kubeconfig(tmp_path, "http://x"))))
        return {i.path for i in dra_informers(client, DraState())}

    assert asyncio.run(paths()) == {k.list_path for k in DRA_KINDS}
    assert [n.kind for n in coscheduling_needs()] == [kinds.COSCHEDULING_POD_GROUP]


def test_an_unreadable_kubeconfig_stops_run_in_one_line(tmp_path: Path) -> None:
    """The loader's one line (test_kube_config.py) is what `run` exits with."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("garbage: [\n")
    result = CliRunner().invoke(main, ["run", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1, result.output
    assert error[0].startswith(f"Error: cannot load {kubeconfig}: while parsing a flow node")
