"""hack/lib.sh's pid_alive, which the control-plane scripts poll while a process starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "hack" / "lib.sh"


def _pid_alive_after(script: str, tmp_path: Path) -> str:
    result = subprocess.run(
        ["bash", "-c", f'source "{LIB}"; D="{tmp_path}"; {script}'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_child_not_yet_execed_is_alive(tmp_path: Path) -> None:
    # Between fork and exec the child's command line is this script's, which does not
    # name the cluster dir; on a loaded machine restart-apiserver.sh saw that window
    # and reported "kube-apiserver exited during restart".
    out = _pid_alive_after(
        '( sleep 3; exec sleep 5 ) & echo $! > "$D/x.pid"; '
        'if pid_alive "$D/x.pid"; then echo alive; else echo dead; fi; kill %1',
        tmp_path,
    )
    assert out == "alive"


def test_an_exited_child_is_dead(tmp_path: Path) -> None:
    out = _pid_alive_after(
        '( exit 3 ) & echo $! > "$D/x.pid"; sleep 0.5; '
        'if pid_alive "$D/x.pid"; then echo alive; else echo dead; fi',
        tmp_path,
    )
    assert out == "dead"


def test_a_stranger_whose_command_line_lacks_the_dir_is_not_ours(tmp_path: Path) -> None:
    # pid 1 is alive but is not a process of this cluster dir (a stale pid file).
    out = _pid_alive_after(
        'echo 1 > "$D/x.pid"; if pid_alive "$D/x.pid"; then echo alive; else echo dead; fi',
        tmp_path,
    )
    assert out == "dead"
