"""Every command the user documentation shows runs in a test (issue #31).

The pages in scope are README.md and docs/**/*.md outside docs/develop/. In them a
fenced block whose info string is ``sh``, ``bash``, ``shell`` or ``console`` is a
*command block*, and must come after (blank lines allowed) one marker comment:

* ``<!-- test: run -->``: run as a bash script (``set -euo pipefail``), in page
  order, in a scratch copy of the repository shared by the page's blocks;
* ``<!-- test: cluster -->``: the same, and the page's test needs a control plane
  (it is marked ``integration``; the page starts one itself with
  ``make cluster-up``, and the harness runs ``make cluster-down`` at the end);
* ``<!-- test: by tests/x/test_y.py::test_name -->``: run by that test instead,
  whose source must name the block's main command words; ``by .ci/run`` is for
  ``make test`` itself, which no test can run (CI runs that script);
* ``expect="text"`` after ``run`` or ``cluster``: the block's output contains it.

``<!-- test: file PATH -->`` before any fenced block writes the block's text to
PATH in the scratch copy, so that a page can show a plugin or a manifest as code
rather than as a heredoc. HTML comments do not show in the rendered site.

This module parses pages and runs blocks; test_doc_commands.py holds the tests.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND_LANGS = frozenset({"sh", "bash", "shell", "console"})
MarkerKind = Literal["run", "cluster", "by", "file"]

# A block may start a control plane (~20 s with cached binaries, minutes to build
# them) or wait for pods to bind; one that takes longer than this is stuck.
BLOCK_TIMEOUT = 900.0

_MARKER = re.compile(r"^\s*<!--\s*test:(?P<body>.*?)-->\s*$")
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\n]*)$")
_RUN_BODY = re.compile(r'^(?P<kind>run|cluster)(?:\s+expect="(?P<expect>[^"]*)")?$')
_BY_BODY = re.compile(r"^by\s+(?P<target>\S+\.py(?:::\w+)+|\.ci/run)$")
_FILE_BODY = re.compile(r"^file\s+(?P<path>\S+)$")


@dataclass(frozen=True)
class Marker:
    kind: MarkerKind
    line: int
    expect: str | None = None
    target: str | None = None  # `by`: tests/x.py::name
    path: str | None = None  # `file`: where to write the block


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository, e.g. docs/tutorial.md
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: Marker | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_command(self) -> bool:
        return self.lang in COMMAND_LANGS


@dataclass
class Page:
    path: str
    blocks: list[Block] = field(default_factory=list)
    # Markers that are malformed or not followed by a fenced block: each a
    # "file:line: why" string, so that a typo cannot silently leave a block untested.
    problems: list[str] = field(default_factory=list)

    @property
    def needs_cluster(self) -> bool:
        return any(b.marker is not None and b.marker.kind == "cluster" for b in self.blocks)

    @property
    def has_work(self) -> bool:
        return any(b.marker is not None for b in self.blocks)


def parse_marker(body: str, line: int) -> Marker | str:
    """The marker in ``<!-- test:BODY -->``, or why BODY is not one."""
    body = body.strip()
    if m := _RUN_BODY.match(body):
        kind: MarkerKind = "run" if m["kind"] == "run" else "cluster"
        return Marker(kind, line, expect=m["expect"])
    if m := _BY_BODY.match(body):
        return Marker("by", line, target=m["target"])
    if m := _FILE_BODY.match(body):
        return Marker("file", line, path=m["path"])
    return f"not a marker: {body!r}"


def parse_page(text: str, page: str) -> Page:
    """Split a Markdown page into its fenced blocks, each with the marker before it."""
    result = Page(page)
    lines = text.splitlines()
    pending: Marker | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _MARKER.match(line):
            if pending is not None:
                result.problems.append(f"{page}:{pending.line}: marker not followed by a block")
            parsed = parse_marker(m["body"], i + 1)
            if isinstance(parsed, str):
                result.problems.append(f"{page}:{i + 1}: {parsed}")
                pending = None
            else:
                pending = parsed
            i += 1
            continue
        if m := _FENCE_OPEN.match(line):
            indent, fence = m["indent"], m["fence"]
            info = m["info"].strip()
            lang = info.split()[0].lstrip("{").lstrip(".").rstrip("}") if info else ""
            body: list[str] = []
            j = i + 1
            closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
            while j < len(lines) and not closing.match(lines[j]):
                # Blocks inside admonitions are indented; their text is not.
                body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
                j += 1
            content = "\n".join(body) + ("\n" if body else "")
            result.blocks.append(Block(page, i + 1, lang, content, pending))
            pending = None
            i = j + 1
            continue
        if line.strip() and pending is not None:
            result.problems.append(f"{page}:{pending.line}: marker not followed by a block")
            pending = None
        i += 1
    if pending is not None:
        result.problems.append(f"{page}:{pending.line}: marker not followed by a block")
    return result


def doc_pages(root: Path = REPO_ROOT) -> list[str]:
    """The pages in scope, relative to ROOT: README.md and docs/ without docs/develop/."""
    pages = ["README.md"] if (root / "README.md").is_file() else []
    for path in sorted((root / "docs").rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("docs/develop/"):
            pages.append(rel)
    return pages


def load_page(page: str, root: Path = REPO_ROOT) -> Page:
    return parse_page((root / page).read_text(encoding="utf-8"), page)


def unmarked(pages: Iterable[Page]) -> list[Block]:
    return [b for p in pages for b in p.blocks if b.is_command and b.marker is None]


# --- `by` markers -------------------------------------------------------------

# Words that say nothing about what a block does: shell plumbing and prompts.
_PLUMBING = frozenset(
    {
        *("cd", "echo", "export", "cat", "ls", "mkdir", "rm", "cp", "mv", "sleep"),
        *("source", ".", "set", "true", "false", "test", "[", "wait", "kill", "head"),
        *("tail", "grep", "sed", "awk", "sort", "tee", "env", "xargs", "printf", "sudo"),
        *("time", "then", "do", "done", "fi", "if", "for", "while", "else", "until"),
    }
)


def command_lines(block: Block) -> list[str]:
    """The commands in a block, with continuation lines joined. In a console block
    only the ``$ `` lines are commands; the rest is their output."""
    text = block.text.replace("\\\n", " ")
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if block.lang == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line and not line.startswith("#"):
            out.append(line)
    return out


def script_text(block: Block) -> str:
    """What bash runs for a block (console output lines dropped)."""
    if block.lang != "console":
        return block.text
    return "".join(line + "\n" for line in command_lines(block))


def main_words(block: Block) -> list[str]:
    """The words a `by` test must mention: each command's program, its subcommand
    (a plain word right after it) and its long flags."""
    words: list[str] = []
    for line in command_lines(block):
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            tokens = line.split()
        segment_start = True
        prev_program: str | None = None
        for tok in tokens:
            if tok in {"|", "||", "&&", ";", "&"} or tok.endswith(";"):
                segment_start, prev_program = True, None
                continue
            if segment_start:
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tok):
                    continue  # FOO=bar cmd
                program = tok.rsplit("/", 1)[-1]
                segment_start = False
                if program in _PLUMBING:
                    prev_program = None
                    continue
                words.append(program)
                prev_program = program
                continue
            if prev_program is not None:
                if re.fullmatch(r"[a-z][a-z0-9-]*", tok):
                    words.append(tok)
                prev_program = None
                continue
            if tok.startswith("--") and len(tok) > 2:
                flag = tok.split("=", 1)[0]
                words.append(flag)
    return list(dict.fromkeys(words))


def test_source(target: str, root: Path = REPO_ROOT) -> str | None:
    """The source of the test function TARGET (``tests/x.py::name`` or
    ``tests/x.py::Class::name``), or None if there is none; for ``.ci/run``, the
    CI's entry script."""
    if target == ".ci/run":
        script = root / target
        return script.read_text(encoding="utf-8") if script.is_file() else None
    path_part, *names = target.split("::")
    path = root / path_part
    if not path.is_file() or not names:
        return None
    source = path.read_text(encoding="utf-8")
    scope: list[ast.stmt] = ast.parse(source).body
    node: ast.AST | None = None
    for name in names:
        node = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == name
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body if isinstance(node, ast.ClassDef) else []
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    return ast.get_source_segment(source, node)


def check_by(block: Block, root: Path = REPO_ROOT) -> str | None:
    """Why BLOCK's `by` marker does not hold, or None if it does."""
    assert block.marker is not None and block.marker.target is not None
    target = block.marker.target
    source = test_source(target, root)
    if source is None:
        return f"{block.where}: no test function {target}"
    missing = [
        w for w in main_words(block) if not re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", source)
    ]
    if missing:
        return f"{block.where}: {target} does not mention {', '.join(missing)}"
    return None


# --- running a page -------------------------------------------------------------


def k8s_bin_dir() -> Path:
    version = (REPO_ROOT / "hack" / "k8s-version").read_text().strip()
    cache = Path(os.environ.get("KUBESCHED_CACHE", Path.home() / ".cache" / "kubesched"))
    return cache / "k8s" / version / "bin"


def copy_clone(dest: Path, root: Path = REPO_ROOT) -> Path:
    """A fresh clone's worth of ROOT in DEST: the files git tracks, and the new ones
    it would (so that a page and its files can be tested before the commit), with
    their mtimes, so that `make` sees the venv as up to date."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        src = root / rel
        if not src.is_file():  # deleted in the working tree, not yet in git
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest


def make_scratch(dest: Path, root: Path = REPO_ROOT) -> Path:
    """The clone a page's blocks run in: `copy_clone`, with the real venv's contents
    linked into .venv instead of a venv of its own (minutes and a network to build).
    Its make stamp is new, so `make run` takes the venv as built even right after
    the lock changed, where make would try to recreate .venv over the real one."""
    copy_clone(dest, root)
    venv = dest / ".venv"
    venv.mkdir()
    for entry in (root / ".venv").iterdir():
        if entry.name != ".installed":
            (venv / entry.name).symlink_to(entry)
    (venv / ".installed").touch()
    return dest


def block_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        [str(scratch / ".venv" / "bin"), str(k8s_bin_dir()), env.get("PATH", "")]
    )
    env["VIRTUAL_ENV"] = str(scratch / ".venv")
    # The venv's editable install points at the real src/; a fresh clone's would point
    # at its own, and the copy is one snapshot even while the tree is being edited.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(scratch / "src"), env.get("PYTHONPATH", "")) if p
    )
    # A KUBECONFIG from the caller's shell must not point the page at another cluster.
    env.pop("KUBECONFIG", None)
    return env


# Set by bash itself for each process; carrying them over would be wrong.
_SHELL_OWN = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})


def read_env(raw: bytes) -> dict[str, str]:
    """The environment `env -0` printed."""
    env: dict[str, str] = {}
    for item in raw.decode(errors="surrogateescape").split("\0"):
        name, sep, value = item.partition("=")
        if sep and name not in _SHELL_OWN:
            env[name] = value
    return env


@dataclass
class BlockRun:
    block: Block
    returncode: int
    output: str


class BlockFailed(AssertionError):
    pass


def describe(run: BlockRun, why: str) -> str:
    return (
        f"{run.block.where}: {why}\n--- block ---\n{run.block.text}"
        f"--- output (last 6000 chars) ---\n{run.output[-6000:]}"
    )


class PageRunner:
    """Runs one page's blocks in order in SCRATCH. Each block is its own bash
    process in its own process group, so that what a failed block left running in
    the background (a `kubesched run &`) is stopped by :meth:`cleanup`."""

    def __init__(self, page: Page, scratch: Path) -> None:
        self.page = page
        self.scratch = scratch
        self.env = block_env(scratch)
        self._groups: list[int] = []
        self.runs: list[BlockRun] = []

    def run_block(self, block: Block) -> BlockRun:
        # The variables a block exports are kept for the next ones, as in the reader's
        # terminal (`export KUBECONFIG=...` once); the directory is the clone's root again.
        fd, name = tempfile.mkstemp(prefix="doc-env-")
        os.close(fd)
        env_file = Path(name)
        script = (
            "set -euo pipefail\n"
            + script_text(block)
            + f"\nenv -0 > {shlex.quote(str(env_file))}\n"
        )
        # Output to a file, not a pipe: a background process the block starts keeps
        # the pipe open, and reading it to EOF would wait for that process.
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                ["bash", "-c", script],
                cwd=self.scratch,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self._groups.append(proc.pid)
            try:
                code = proc.wait(timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                code = proc.wait()
                out.seek(0)
                run = BlockRun(block, code, out.read().decode(errors="replace"))
                raise BlockFailed(describe(run, f"timed out after {BLOCK_TIMEOUT:.0f}s")) from None
            out.seek(0)
            run = BlockRun(block, code, out.read().decode(errors="replace"))
        if code == 0 and env_file.stat().st_size:
            self.env = read_env(env_file.read_bytes())
        env_file.unlink(missing_ok=True)
        self.runs.append(run)
        return run

    def write_file(self, block: Block) -> None:
        assert block.marker is not None and block.marker.path is not None
        target = (self.scratch / block.marker.path).resolve()
        if not target.is_relative_to(self.scratch.resolve()):
            raise BlockFailed(f"{block.where}: file {block.marker.path} is outside the clone")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")

    def steps(self) -> Iterator[Block]:
        for block in self.page.blocks:
            if block.marker is not None and block.marker.kind in ("run", "cluster", "file"):
                yield block

    def run_all(self) -> None:
        for block in self.steps():
            assert block.marker is not None
            if block.marker.kind == "file":
                self.write_file(block)
                continue
            run = self.run_block(block)
            if run.returncode != 0:
                raise BlockFailed(describe(run, f"exit code {run.returncode}"))
            expect = block.marker.expect
            if expect is not None and expect not in run.output:
                raise BlockFailed(describe(run, f"output does not contain {expect!r}"))

    def cleanup(self) -> str:
        """Stop the page's control plane and what its blocks left running; return
        cluster-down's output when it failed (the caller reports it)."""
        problem = ""
        if self.page.needs_cluster and (self.scratch / ".cluster").exists():
            done = subprocess.run(
                ["make", "cluster-down"],
                cwd=self.scratch,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if done.returncode != 0:
                problem = f"make cluster-down failed:\n{done.stdout}{done.stderr}"
        for pgid in self._groups:
            _kill_group(pgid, signal.SIGTERM)
        return problem


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
