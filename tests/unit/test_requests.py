from typing import Any

from kubesched.api.requests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    non_zero_requests,
    pod_requests,
    requests_and_non_zero,
)
from kubesched.testing import make_pod

Gi = 1024**3
Mi = 1024**2


def container(name: str, cpu: str | None = None, memory: str | None = None, **extra: Any) -> Any:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    return {"name": name, "resources": {"requests": requests}, **extra}


def pod(**spec: Any) -> Any:
    return make_pod("p", spec=spec)


def test_containers_are_summed() -> None:
    p = pod(containers=[container("a", "1", "1Gi"), container("b", "500m", "512Mi")])
    assert pod_requests(p) == {"cpu": 1500, "memory": Gi + 512 * Mi}


def test_limits_stand_in_for_missing_requests() -> None:
    p = pod(containers=[{"name": "a", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}}}])
    assert pod_requests(p) == {"cpu": 2000, "nvidia.com/gpu": 1}


def test_init_containers_take_the_max() -> None:
    # The init container runs alone: the pod needs max(2, 1 + 0.5) cpu.
    p = pod(
        initContainers=[container("init", "2", "1Gi")],
        containers=[container("a", "1", "2Gi"), container("b", "500m", "1Gi")],
    )
    assert pod_requests(p) == {"cpu": 2000, "memory": 3 * Gi}


def test_sidecars_add_to_the_sum_and_to_later_init_containers() -> None:
    # sidecar 1 cpu runs throughout: containers 1 + sidecar 1 = 2;
    # the init container after the sidecar runs beside it: 1.5 + 1 = 2.5 -> max is 2.5.
    p = pod(
        initContainers=[
            container("sidecar", "1", restartPolicy="Always"),
            container("migrate", "1500m"),
        ],
        containers=[container("app", "1")],
    )
    assert pod_requests(p)["cpu"] == 2500


def test_init_container_before_the_sidecar_does_not_run_beside_it() -> None:
    p = pod(
        initContainers=[
            container("migrate", "1500m"),
            container("sidecar", "1", restartPolicy="Always"),
        ],
        containers=[container("app", "1")],
    )
    assert pod_requests(p)["cpu"] == 2000


def test_overhead_is_added_last() -> None:
    p = pod(
        initContainers=[container("init", "2")],
        containers=[container("a", "1")],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(p) == {"cpu": 2250, "memory": 120 * Mi}


def test_pod_level_resources_replace_cpu_and_memory() -> None:
    p = pod(
        containers=[
            container(
                "a",
                "1",
                "1Gi",
                resources={"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
            )
        ],
        resources={"requests": {"cpu": "3", "memory": "4Gi"}},
        overhead={"cpu": "100m"},
    )
    assert pod_requests(p) == {"cpu": 3100, "memory": 4 * Gi, "nvidia.com/gpu": 1}


def test_non_zero_defaults_for_containers_without_requests() -> None:
    p = pod(containers=[{"name": "a"}, container("b", "300m")])
    assert pod_requests(p) == {"cpu": 300}
    assert non_zero_requests(p) == (
        DEFAULT_MILLI_CPU_REQUEST + 300,
        DEFAULT_MEMORY_REQUEST * 2,
    )


def test_explicit_zero_is_not_defaulted() -> None:
    p = pod(containers=[container("a", "0", "0")])
    assert non_zero_requests(p) == (0, 0)


def test_requests_and_non_zero_parse_once_and_answer_as_the_two_functions() -> None:
    """PodInfo's one pass over the containers gives what pod_requests and
    non_zero_requests give apart, sidecars, init containers, overhead and
    pod-level resources included, and leaves the parsed amounts as they were."""
    pods = [
        pod(containers=[container("a", "1", "1Gi"), container("b")]),
        pod(
            initContainers=[
                container("init", "2", "64Mi"),
                container("side", "500m", restartPolicy="Always"),
                container("late", "300m"),
            ],
            containers=[container("main", "1")],
            overhead={"cpu": "250m", "memory": "10Mi"},
        ),
        pod(
            containers=[container("a", "1", "1Gi")],
            resources={"requests": {"cpu": "3"}, "limits": {"memory": "2Gi"}},
        ),
    ]
    for p in pods:
        both = requests_and_non_zero(p)
        assert both == (pod_requests(p), non_zero_requests(p))
        assert requests_and_non_zero(p) == both
