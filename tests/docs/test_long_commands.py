"""Commands the docs show that run for many minutes or hours (`make diff`), checked
without their full run: make expands each into the harness's command line, and the
harness's option parser takes it. The harness itself runs at CI size in
tests/differential/test_differential.py (`pytest -m integration tests/differential`)."""

from __future__ import annotations

import contextlib
import io
import shlex
import subprocess

import pytest

from tests.docs.doc_commands import REPO_ROOT, command_lines, load_page

PAGE = "docs/explanation/differential.md"


def _make_diff_lines() -> list[str]:
    page = load_page(PAGE)
    lines = [
        line
        for block in page.blocks
        if block.marker is not None and block.marker.kind == "by"
        for line in command_lines(block)
    ]
    return [line for line in lines if line.startswith("make diff")]


def expanded(line: str) -> list[str]:
    """The harness's command line that `make` runs for LINE (make -n, not run)."""
    words = shlex.split(line, comments=True)
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(REPO_ROOT), *words[1:]],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    command = next(
        c for c in out.replace("\\\n", " ").splitlines() if "tests.differential.run" in c
    )
    tokens = shlex.split(command)
    return tokens[tokens.index("tests.differential.run") + 1 :]


def parse(args: list[str]) -> tuple[int, str]:
    """The harness's exit code and stderr for ARGS plus --help: its parser checks
    them, then --help stops it before any control plane starts (in process: one
    import of the harness instead of a Python start per line)."""
    from tests.differential import run

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            run.main([*args, "--help"])
        except SystemExit as exit_:
            return int(exit_.code or 0), err.getvalue()
    return 0, err.getvalue()


def test_the_documented_make_diff_commands_are_valid() -> None:
    """Each `make diff ...` of the page expands to options the harness accepts (its
    parser checks them, then --help stops it before any control plane starts); the
    page's `pytest -m integration tests/differential` is the CI-size run itself."""
    lines = _make_diff_lines()
    assert len(lines) >= 4
    for line in lines:
        args = expanded(line)
        if "N=" in line:
            assert args[args.index("-n") + 1] == line.split("N=")[1].split()[0]
        code, err = parse(args)
        assert code == 0, f"{line}: {err}"


@pytest.mark.parametrize("bad", ["make diff DIFF_SIZE=enormous"])
def test_an_invalid_documented_option_would_be_caught(bad: str) -> None:
    code, err = parse(expanded(bad))
    assert code == 2 and "invalid choice: 'enormous'" in err
