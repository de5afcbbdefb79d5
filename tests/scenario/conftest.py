from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main

Simulate = Callable[..., tuple[int, dict[str, Any], str]]


@pytest.fixture
def simulate_yaml(tmp_path: Path) -> Simulate:
    """Write manifests to files and run `kubesched simulate -o json` on them."""

    def run(*documents: str, args: tuple[str, ...] = ()) -> tuple[int, dict[str, Any], str]:
        paths = []
        for i, text in enumerate(documents):
            path = tmp_path / f"{i:02d}.yaml"
            path.write_text(textwrap.dedent(text))
            paths += ["-f", str(path)]
        result = CliRunner().invoke(main, ["simulate", *paths, "-o", "json", "--seed", "1", *args])
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, json.loads(result.stdout), result.stderr

    return run
