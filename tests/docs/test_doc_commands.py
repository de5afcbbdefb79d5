"""The commands in the user documentation run as shown (doc_commands.py has the
marker contract). One test per page runs its blocks in a scratch copy of the
repository; the others check that no command block is left without a marker."""

from __future__ import annotations

import re
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.docs.doc_commands import (
    REPO_ROOT,
    Block,
    BlockFailed,
    Marker,
    Page,
    PageRunner,
    check_by,
    doc_pages,
    load_page,
    main_words,
    make_scratch,
    parse_marker,
    parse_page,
    script_text,
    unmarked,
)

PAGES = [load_page(p) for p in doc_pages()]


def _param(page: Page) -> object:
    marks = [pytest.mark.integration] if page.needs_cluster else []
    # A page starting a control plane may build its binaries first (minutes).
    marks.append(pytest.mark.timeout(1800 if page.needs_cluster else 900))
    return pytest.param(page, id=page.path, marks=marks)


@pytest.mark.parametrize("page", [_param(p) for p in PAGES if p.has_work])
def test_page_commands(page: Page, tmp_path: Path) -> None:
    """The page's run/cluster blocks succeed in order on a fresh copy of the
    repository, and its `by` markers name tests that run those commands."""
    assert not page.problems, "\n".join(page.problems)
    by_problems = [
        why
        for b in page.blocks
        if b.marker is not None and b.marker.kind == "by"
        if (why := check_by(b)) is not None
    ]
    assert not by_problems, "\n".join(by_problems)
    runner = PageRunner(page, make_scratch(tmp_path / "clone"))
    try:
        runner.run_all()
    finally:
        down = runner.cleanup()
    assert not down, down


def test_every_command_block_has_a_marker() -> None:
    missing = [f"{b.where}: ```{b.lang}: {b.text.partition(chr(10))[0]}" for b in unmarked(PAGES)]
    assert not missing, "command blocks without a <!-- test: ... --> marker:\n" + "\n".join(missing)


def test_markers_are_well_formed() -> None:
    problems = [p for page in PAGES for p in page.problems]
    assert not problems, "\n".join(problems)


def test_by_markers_name_real_tests() -> None:
    """Checked here too, without a control plane, for pages whose own test is
    an integration test."""
    problems = [
        why
        for page in PAGES
        for b in page.blocks
        if b.marker is not None and b.marker.kind == "by"
        if (why := check_by(b)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_the_pages_in_scope() -> None:
    pages = doc_pages()
    assert "README.md" in pages and "docs/tutorial.md" in pages
    assert "docs/how-to/write-a-plugin.md" in pages
    assert not [p for p in pages if p.startswith("docs/develop/")]


# --- the parser and runner themselves ------------------------------------------

SAMPLE = textwrap.dedent(
    """\
    # A page

    <!-- test: run -->
    ```sh
    echo hello
    ```

    <!-- test: cluster expect="bound" -->

    ```bash
    kubectl get pods
    ```

    <!-- test: by tests/docs/test_doc_commands.py::test_by_target -->
    ```shell
    kubesched simulate -f x --seed 1
    ```

    <!-- test: file examples/x.py -->
    ```python
    X = 1
    ```

    ```sh
    make run
    ```

    ```text
    not a command
    ```

    ```console
    $ kubesched --help
    Usage: kubesched
    ```
    """
)


def test_parse_markers_of_each_kind() -> None:
    page = parse_page(SAMPLE, "p.md")
    assert page.problems == []
    kinds = [(b.line, b.lang, b.marker.kind if b.marker else None) for b in page.blocks]
    assert kinds == [
        (4, "sh", "run"),
        (10, "bash", "cluster"),
        (15, "shell", "by"),
        (20, "python", "file"),
        (24, "sh", None),
        (28, "text", None),
        (32, "console", None),
    ]
    assert page.blocks[0].text == "echo hello\n"
    assert page.blocks[1].marker == Marker("cluster", 8, expect="bound")
    assert page.blocks[2].marker is not None
    assert page.blocks[2].marker.target == "tests/docs/test_doc_commands.py::test_by_target"
    assert page.blocks[3].marker == Marker("file", 19, path="examples/x.py")
    assert page.needs_cluster


def test_unmarked_command_blocks_are_listed() -> None:
    page = parse_page(SAMPLE, "p.md")
    # The text block needs no marker; the sh and console blocks do.
    assert [b.where for b in unmarked([page])] == ["p.md:24", "p.md:32"]


def test_bad_and_stray_markers_are_problems() -> None:
    text = textwrap.dedent(
        """\
        <!-- test: runn -->
        ```sh
        true
        ```
        <!-- test: run -->
        Some prose in between.
        ```sh
        true
        ```
        <!-- test: run -->
        """
    )
    page = parse_page(text, "p.md")
    assert page.problems == [
        "p.md:1: not a marker: 'runn'",
        "p.md:5: marker not followed by a block",
        "p.md:10: marker not followed by a block",
    ]
    assert [b.marker for b in page.blocks] == [None, None]


def test_indented_block_in_an_admonition() -> None:
    text = '!!! note\n    <!-- test: run expect="x" -->\n    ```sh\n    echo x\n    ```\n'
    (block,) = parse_page(text, "p.md").blocks
    assert block.marker == Marker("run", 2, expect="x")
    assert block.text == "echo x\n"


def test_console_blocks_run_only_their_prompts() -> None:
    block = Block("p.md", 1, "console", "$ echo a\na\n$ echo b \\\n  c\nb c\n", None)
    assert script_text(block) == "echo a\necho b    c\n"


def test_main_words() -> None:
    text = (
        "kubesched simulate -f examples/cluster --seed 1 --config=x.yaml   # note\n"
        "cd deploy && helm template kubesched deploy/helm --set a=b | kubectl apply -f -\n"
        "FOO=1 make cluster-up\n"
    )
    block = Block("p.md", 1, "sh", text, None)
    assert main_words(block) == [
        "kubesched",
        "simulate",
        "--seed",
        "--config",
        "helm",
        "template",
        "--set",
        "kubectl",
        "apply",
        "make",
        "cluster-up",
    ]


def test_by_target() -> None:
    """The target of SAMPLE's `by` marker: it names kubesched simulate --seed."""
    page = parse_page(SAMPLE, "p.md")
    assert check_by(page.blocks[2]) is None


def test_by_marker_must_mention_the_command() -> None:
    marker = Marker("by", 1, target="tests/docs/test_doc_commands.py::test_by_target")
    block = Block("p.md", 3, "sh", "helm template kubesched deploy/helm --set x=1\n", marker)
    assert check_by(block) == (
        "p.md:3: tests/docs/test_doc_commands.py::test_by_target does not mention "
        "helm, template, --set"
    )
    gone = Marker("by", 1, target="tests/docs/test_doc_commands.py::no_such_test")
    block = Block("p.md", 3, "sh", "true\n", gone)
    assert (
        check_by(block) == "p.md:3: no test function tests/docs/test_doc_commands.py::no_such_test"
    )


def test_by_ci_run_holds_only_for_what_ci_runs() -> None:
    """`make test` cannot run inside the tests it starts: `by .ci/run` says CI runs it,
    and holds only while .ci/run does."""
    marker = parse_marker("by .ci/run", 1)
    assert isinstance(marker, Marker) and marker.target == ".ci/run"
    assert check_by(Block("p.md", 3, "sh", "make test\n", marker)) is None
    assert check_by(Block("p.md", 3, "sh", "make bench\n", marker)) == (
        "p.md:3: .ci/run does not mention bench"
    )


def test_runner_writes_files_runs_in_order_and_checks_output(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        <!-- test: file sub/greeting.txt -->
        ```text
        hello from a file
        ```
        <!-- test: run expect="hello from a file" -->
        ```sh
        cat sub/greeting.txt
        test -L .venv/bin && command -v kubesched
        ```
        <!-- test: run expect="absent text" -->
        ```sh
        echo something else
        ```
        """
    )
    page = parse_page(text, "p.md")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(REPO_ROOT / ".venv" / "bin")
    runner = PageRunner(page, tmp_path)
    with pytest.raises(BlockFailed, match=r"p\.md:11: output does not contain 'absent text'"):
        runner.run_all()
    runner.cleanup()
    assert [r.returncode for r in runner.runs] == [0, 0]
    assert str(tmp_path / ".venv" / "bin" / "kubesched") in runner.runs[0].output


def test_a_failing_block_stops_the_page(tmp_path: Path) -> None:
    text = "<!-- test: run -->\n```sh\nfalse\necho not reached\n```\n"
    text += "<!-- test: run -->\n```sh\ntouch later\n```\n"
    runner = PageRunner(parse_page(text, "p.md"), tmp_path)
    with pytest.raises(BlockFailed, match=r"p\.md:2: exit code 1") as failed:
        runner.run_all()
    runner.cleanup()
    assert "false" in str(failed.value)
    assert not (tmp_path / "later").exists()


def test_background_processes_do_not_hold_up_a_block(tmp_path: Path) -> None:
    """A block that starts a server in the background returns at once, and the
    page's cleanup stops it."""
    text = "<!-- test: run -->\n```sh\nsleep 300 &\necho $! > sleeper.pid\n```\n"
    runner = PageRunner(parse_page(text, "p.md"), tmp_path)
    runner.run_all()
    pid = int((tmp_path / "sleeper.pid").read_text())
    assert Path(f"/proc/{pid}").exists()
    runner.cleanup()
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or "Z" in _proc_state(pid):
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or "Z" in _proc_state(pid)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


def test_scratch_is_a_fresh_clone(tmp_path: Path) -> None:
    clone = make_scratch(tmp_path / "clone")
    assert (clone / "Makefile").read_bytes() == (REPO_ROOT / "Makefile").read_bytes()
    pyproject = "pyproject.toml"
    assert (clone / pyproject).stat().st_mtime == (REPO_ROOT / pyproject).stat().st_mtime
    assert (clone / ".venv" / "bin").resolve() == (REPO_ROOT / ".venv" / "bin").resolve()
    # make takes the borrowed venv as built.
    done = subprocess.run(["make", "-q", "venv"], cwd=clone, check=False)
    assert done.returncode == 0
    assert not (clone / ".git").exists()
    # Its blocks run the clone's own sources and the venv's commands.
    text = "<!-- test: run -->\n```sh\n"
    text += 'python -c "import kubesched; print(kubesched.__file__)"\ncommand -v kubesched\n```\n'
    runner = PageRunner(parse_page(text, "p.md"), clone)
    runner.run_all()
    runner.cleanup()
    assert runner.runs[0].output.splitlines() == [
        str(clone / "src" / "kubesched" / "__init__.py"),
        str(clone / ".venv" / "bin" / "kubesched"),
    ]


def test_exported_variables_carry_over_to_later_blocks(tmp_path: Path) -> None:
    text = "<!-- test: run -->\n```sh\nexport GREETING=hi\nLOCAL=no\ncd /\n```\n"
    text += '<!-- test: run expect="hi-unset-clone" -->\n```sh\n'
    text += 'echo "$GREETING-${LOCAL:-unset}-$(basename "$PWD")"\n```\n'
    clone = tmp_path / "clone"
    clone.mkdir()
    runner = PageRunner(parse_page(text, "p.md"), clone)
    runner.run_all()
    runner.cleanup()
    assert runner.runs[1].output == "hi-unset-clone\n"


@pytest.mark.integration
def test_a_failing_cluster_page_still_stops_its_control_plane(tmp_path: Path) -> None:
    text = "<!-- test: cluster -->\n```sh\nmake cluster-up\n```\n"
    text += "<!-- test: cluster -->\n```sh\ncp .cluster/etcd.pid etcd.pid\nfalse\n```\n"
    clone = make_scratch(tmp_path / "clone")
    runner = PageRunner(parse_page(text, "p.md"), clone)
    with pytest.raises(BlockFailed, match=r"p\.md:6: exit code 1"):
        runner.run_all()
    etcd = int((clone / "etcd.pid").read_text())
    assert Path(f"/proc/{etcd}").exists()
    assert runner.cleanup() == ""
    assert not (clone / ".cluster").exists()
    for _ in range(100):
        if _proc_state(etcd) in ("gone", "Z"):
            break
        time.sleep(0.1)
    assert _proc_state(etcd) in ("gone", "Z")


def test_markers_do_not_show_in_the_rendered_page() -> None:
    """mkdocs renders with Python-Markdown, which passes HTML comments through as
    comments: the browser shows none of them."""
    import markdown  # type: ignore[import-untyped]  # mkdocs' own dependency

    html = markdown.markdown(SAMPLE, extensions=["fenced_code"])
    assert "<!-- test: run -->" in html
    visible = re.sub(r"<!--.*?-->", "", html, flags=re.S)
    assert "test:" not in visible
    assert "echo hello" in visible
