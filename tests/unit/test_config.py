"""KubeSchedulerConfiguration: defaults, plugin merging, and errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.config import ConfigError, load_config
from kubesched.config.file import merge_plugin_sets, parse_config
from kubesched.framework.interfaces import EXTENSION_POINTS
from kubesched.framework.profile import DEFAULT_MULTI_POINT, PluginRef, PluginSet, resolve
from kubesched.plugins.noderesources import NodeResourcesFitArgs
from kubesched.plugins.registry import default_registry

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def test_defaults_match_kube_scheduler() -> None:
    cfg = parse_config(dict(HEAD))
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert (cfg.lease_name, cfg.lease_namespace) == ("kube-scheduler", "kube-system")
    assert (cfg.pod_initial_backoff, cfg.pod_max_backoff) == (1.0, 10.0)
    assert (cfg.qps, cfg.burst, cfg.parallelism) == (50.0, 100, 16)
    assert cfg.profiles[0].plugins["multiPoint"].enabled == list(DEFAULT_MULTI_POINT)


def test_profile_plugins_merge_into_the_defaults() -> None:
    cfg = parse_config(
        {
            **HEAD,
            "profiles": [
                {
                    "schedulerName": "packer",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                            "disabled": [{"name": "ImageLocality"}],
                        },
                        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                    },
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated"}},
                        }
                    ],
                }
            ],
        }
    )
    profile = cfg.profiles[0]
    multi = profile.plugins["multiPoint"].enabled
    names = [p.name for p in multi]
    assert "ImageLocality" not in names
    # the custom entry takes the default's place, with its weight
    assert multi[names.index("NodeResourcesFit")] == PluginRef("NodeResourcesFit", 5)
    assert names.index("NodeResourcesFit") == [p.name for p in DEFAULT_MULTI_POINT].index(
        "NodeResourcesFit"
    )
    assert profile.plugins["score"].disabled == [PluginRef("NodeResourcesBalancedAllocation")]
    # the args reach the profile decoded, as the plugin is built with them
    fit_args = profile.plugin_config["NodeResourcesFit"]
    assert isinstance(fit_args, NodeResourcesFitArgs)
    assert fit_args.scoring_strategy.type == "MostAllocated"


def test_disable_all_then_enable() -> None:
    merged = merge_plugin_sets(
        PluginSet([PluginRef("A"), PluginRef("B")]),
        PluginSet([PluginRef("C")], [PluginRef("*")]),
    )
    assert merged.enabled == [PluginRef("C")]


def test_multi_point_disabled_all_keeps_what_multi_point_enables(tmp_path: Path) -> None:
    """kube-scheduler v1.36.3 with `multiPoint: {disabled: ["*"], enabled: [...]}` runs
    the enabled ones: multiPoint's disabled list only drops defaults (mergePluginSet);
    expandMultiPointPlugins reads each point's own disabled list, not multiPoint's."""
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: s\n  plugins:\n    multiPoint:\n"
        "      disabled: [{name: '*'}]\n"
        "      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeName}]\n"
    )
    profile = load_config(path).profiles[0]
    points = resolve(profile, EXTENSION_POINTS, default_registry()).points
    assert points["queueSort"] == ["PrioritySort"]
    assert points["bind"] == ["DefaultBinder"]
    assert points["filter"] == ["NodeName"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {**HEAD, "profiles": [{"schedulerName": "x", "plugin": {}}]},
            "profiles[0]: Object contains unknown field `plugin`",
        ),
        ({**HEAD, "percentageOfNodesToScore": "lots"}, "percentageOfNodesToScore: Expected `int"),
        ({**HEAD, "percentageOfNodesToScore": 101}, "percentageOfNodesToScore: Invalid value: 101"),
        (
            {**HEAD, "leaderElection": {"leaseDuration": "fifteen"}},
            "leaderElection.leaseDuration: invalid duration 'fifteen'",
        ),
        (
            {**HEAD, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
            "profiles[1].schedulerName: Duplicate value: 'a'",
        ),
        ({**HEAD, "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion/kind must be"),
        (
            {**HEAD, "podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
            "podMaxBackoffSeconds",
        ),
        # int32 in kube-scheduler's v1 types: a larger weight fails its decoding.
        (
            {
                **HEAD,
                "profiles": [
                    {
                        "schedulerName": "a",
                        "plugins": {
                            "score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}
                        },
                    }
                ],
            },
            "profiles[0].plugins.score.enabled[0].weight: Expected `int` <= 2147483647",
        ),
        ({**HEAD, "parallelism": 2**31}, "parallelism: Expected `int` <= 2147483647"),
    ],
)
def test_bad_values_name_the_field(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(config, "sched.yaml")
    assert str(err.value).startswith("sched.yaml: ")
    assert message in str(err.value)


def test_durations(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaseDuration: 1m30s, renewDeadline: 500ms, retryPeriod: 2s}\n"
    )
    cfg = load_config(path)
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (90.0, 0.5, 2.0)


def test_run_reports_a_bad_config_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogus: 1\n"
    )
    result = CliRunner().invoke(main, ["run", "--config", str(path)])
    assert result.exit_code == 1
    assert "Object contains unknown field `bogus`" in result.output
    assert "Traceback" not in result.output
