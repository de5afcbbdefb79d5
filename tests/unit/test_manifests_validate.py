"""`--validate=strict|warn|ignore` in the loader, as kubectl's (fieldValidation):
unknown and duplicate fields refused, reported or dropped; values the API server
cannot decode refused in every mode; a live cluster's objects never refused for
fields this version does not know."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.cluster.manifests import load_paths
from tests.unit.manifests_helpers import only_problem, pod_doc, write

TYPO = pod_doc("typo", "  nodeSelecter: {disk: ssd}\n")


def test_strict_refuses_an_unknown_field_and_names_the_close_one(tmp_path: Path) -> None:
    state = load_paths([write(tmp_path, TYPO)])
    problem = only_problem(state)
    assert (problem.kind, problem.name, problem.field) == (
        "Pod",
        "default/typo",
        "spec.nodeSelecter",
    )
    assert problem.message == 'unknown field "spec.nodeSelecter"; did you mean "nodeSelector"?'
    assert not state.pods


def test_warn_keeps_the_object_and_reports_the_field(tmp_path: Path) -> None:
    state = load_paths([write(tmp_path, TYPO)], validate="warn")
    assert not state.problems
    assert [p.key for p in state.pods] == ["default/typo"]
    assert any(
        n.startswith("warning: ") and "field spec.nodeSelecter: unknown field" in n
        for n in state.notes
    ), state.notes


def test_ignore_drops_the_field_silently(tmp_path: Path) -> None:
    state = load_paths([write(tmp_path, TYPO)], validate="ignore")
    assert not state.problems
    assert [p.key for p in state.pods] == ["default/typo"]
    assert not [n for n in state.notes if "nodeSelecter" in n]


@pytest.mark.parametrize("mode", ["strict", "warn", "ignore"])
def test_a_value_out_of_int32_is_refused_in_every_mode(tmp_path: Path, mode: str) -> None:
    text = pod_doc("big", "  priority: 99999999999999999999\n")
    problem = only_problem(load_paths([write(tmp_path, text)], validate=mode))
    assert problem.field == "spec.priority"
    assert problem.message == (
        "json: cannot unmarshal number 99999999999999999999 into Go struct field "
        "PodSpec.spec.priority of type int32"
    )


def test_int32_bounds(tmp_path: Path) -> None:
    top = pod_doc("top", "  priority: 2147483647\n")
    over = pod_doc("over", "  priority: 2147483648\n")
    low = pod_doc("low", "  priority: -2147483648\n")
    under = pod_doc("under", "  priority: -2147483649\n")
    state = load_paths([write(tmp_path, "---\n".join([top, over, low, under]))])
    assert sorted(p.key for p in state.pods) == ["default/low", "default/top"]
    assert sorted(p.name for p in state.problems) == ["default/over", "default/under"]


def test_a_workload_template_is_validated_to_its_depth(tmp_path: Path) -> None:
    deployment = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          selector: {matchLabels: {app: d}}
          template:
            metadata: {labels: {app: d}}
            spec:
              containers:
              - name: c
                resources: {requestz: {cpu: 1}}
        """
    )
    problem = only_problem(load_paths([write(tmp_path, deployment)]))
    assert (problem.kind, problem.field) == (
        "Deployment",
        "spec.template.spec.containers[0].resources.requestz",
    )
    assert 'did you mean "requests"?' in problem.message


def test_every_kind_read_is_validated(tmp_path: Path) -> None:
    """A Service's and a RuntimeClass's nested fields, a ReplicationController's template."""
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{port: 80, targetPorts: 8080}]}
        ---
        apiVersion: node.k8s.io/v1
        kind: RuntimeClass
        metadata: {name: r}
        handler: r
        scheduling: {tolerationz: []}
        ---
        apiVersion: v1
        kind: ReplicationController
        metadata: {name: rc}
        spec:
          template:
            metadata: {labels: {app: rc}}
            spec: {containers: [{name: c, imagePullPolicie: Always}]}
        """
    )
    state = load_paths([write(tmp_path, text)])
    fields = sorted(p.field or "" for p in state.problems)
    assert fields == [
        "scheduling.tolerationz",
        "spec.ports[0].targetPorts",
        "spec.template.spec.containers[0].imagePullPolicie",
    ]


def test_a_duplicate_json_key_is_refused(tmp_path: Path) -> None:
    text = (
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, '
        '"spec": {"nodeName": "a", "nodeName": "b", "containers": [{"name": "c"}]}}'
    )
    problem = only_problem(load_paths([write(tmp_path, text, "pod.json")]))
    assert (problem.field, problem.message) == ("spec.nodeName", 'duplicate field "spec.nodeName"')


def test_a_kind_without_a_schema_is_noted(tmp_path: Path) -> None:
    group = textwrap.dedent(
        """\
        apiVersion: scheduling.x-k8s.io/v1alpha1
        kind: PodGroup
        metadata: {name: g}
        spec: {minMember: 2}
        """
    )
    state = load_paths([write(tmp_path, group)])
    assert any(
        "the fields of PodGroup (scheduling.x-k8s.io/v1alpha1) are not validated" in n
        for n in state.notes
    ), state.notes


def test_a_live_clusters_objects_are_not_refused_for_fields_it_knows(tmp_path: Path) -> None:
    """--from-cluster: a newer API server's pods may carry fields v1.36.3 lacks."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "live", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}], "aFieldOfTomorrow": True},
    }
    state = load_paths([write(tmp_path, TYPO)], before=[("cluster", 1, pod)])
    assert [p.key for p in state.pods] == ["default/live"]
    assert [p.name for p in state.problems] == ["default/typo"]


def test_the_cli_option(tmp_path: Path) -> None:
    path = write(tmp_path, TYPO)
    refused = CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", "json"])
    assert refused.exit_code == 1
    assert "unknown field" in json.loads(refused.stdout)["problems"][0]
    warned = CliRunner().invoke(
        main, ["simulate", "-f", str(path), "-o", "json", "--validate", "warn"]
    )
    assert warned.exit_code == 0, warned.output
    document = json.loads(warned.stdout)
    assert document["placements"] == {"default/typo": None}
    assert any("unknown field" in n for n in document["notes"])
