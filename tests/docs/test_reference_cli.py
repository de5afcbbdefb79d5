"""docs/reference/cli.md renders every command and option of `kubesched` (issue #31).

The page's own `::: mkdocs-click` block is rendered with the Markdown extension the
site uses, so a wrong module or command name, a subcommand left out or an option that
does not show (a custom click class, say) fails here, not only in the browser.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import click
import markdown  # type: ignore[import-untyped]  # no stubs; mkdocs renders with it

from kubesched.cli.main import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"


def rendered_page() -> str:
    """The page as mkdocs turns it into HTML: the extensions of mkdocs.yml it needs, and
    the three mkdocs always adds."""
    extensions = ["toc", "tables", "fenced_code", "attr_list", "mkdocs-click"]
    text = markdown.markdown(PAGE.read_text(), extensions=extensions)
    return html.unescape(text)


def commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
    """Every command under `group` by its full path ("kubesched run"), nested groups too."""
    ctx = click.Context(group, info_name=path)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if command.hidden:
            continue
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{path} {name}")


def sections(page: str) -> dict[str, str]:
    """The HTML of each command's section, by its heading's anchor ("kubesched-run")."""
    parts = re.split(r'<h\d[^>]*? id="([^"]+)"', page)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def flag_shown(flag: str, text: str) -> bool:
    # A whole flag: "--v" must not be taken as found inside "--validate".
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def test_every_command_has_a_section() -> None:
    found = sections(rendered_page())
    assert "kubesched" in found
    expected = {path.replace(" ", "-") for path, _ in commands(main, "kubesched")}
    # The five commands the CLI had when the page was written, at least.
    assert {"kubesched-simulate", "kubesched-run", "kubesched-explain"} <= expected
    missing = expected - found.keys()
    assert not missing, f"commands missing from {PAGE.name}: {sorted(missing)}"


def test_every_option_and_argument_of_every_command_is_shown() -> None:
    found = sections(rendered_page())
    missing: list[str] = []
    for path, command in [("kubesched", main), *commands(main, "kubesched")]:
        section = found.get(path.replace(" ", "-"), "")
        for param in command.params:
            if isinstance(param, click.Option) and param.hidden:
                continue
            if isinstance(param, click.Option):
                flags = [*param.opts, *param.secondary_opts]
            else:
                # An argument shows in the usage line, by its metavar (POD...).
                flags = [param.make_metavar(click.Context(command))]
            missing += [f"{path} {flag}" for flag in flags if not flag_shown(flag, section)]
    assert not missing, f"options missing from {PAGE.name}: {missing}"


def test_run_shows_its_options_despite_its_own_command_class() -> None:
    """`run` parses its arguments with a click.Command subclass (klog's -v=N): its
    section still lists the options, with their help text."""
    run = sections(rendered_page())["kubesched-run"]
    run_command = main.commands["run"]
    assert type(run_command) is not click.Command
    assert flag_shown("--secure-port", run)
    assert "HTTPS port of /healthz" in run
