"""How the framework times its extension points.

Each of frameworkImpl's RunXPlugins (framework/runtime/framework.go) starts a
clock and, in a deferred function, observes FrameworkExtensionPointDuration with
the status it returns, so once per run and also when it fails. Here that is
the `extension_point` decorator on Framework's run methods (`async_extension_point`
for PreBind and Bind); a run method that raises (PluginError) is recorded as an
Error. Filter's duration, which upstream takes in the scheduler around a whole
filter pass, is `TimedBlock` (Framework.run_filter_pass).

When the framework records nothing (`recording` false: no MetricsRecorder), the
decorated method costs one more call and one check, nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from time import perf_counter
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from kubesched.framework.metrics_recorder import MetricsRecorder
from kubesched.framework.status import CODE_NAMES, Code, Status

SUCCESS = int(Code.SUCCESS)
ERROR = int(Code.ERROR)


class PointRunner(Protocol):
    """What the timing needs of the framework."""

    recording: bool  # whether anyone keeps the figures
    profile_name: str
    metrics: MetricsRecorder


Runner = TypeVar("Runner", bound=PointRunner)
Params = ParamSpec("Params")
Result = TypeVar("Result")


def observe_point(runner: PointRunner, point: str, code: int, started: float) -> None:
    """FrameworkExtensionPointDuration of one run of `point` begun at `started`."""
    seconds = perf_counter() - started
    runner.metrics.observe_extension_point(point, CODE_NAMES[code], runner.profile_name, seconds)


def status_code(result: object) -> int:
    """The code of the status a run method returned: the Status itself, or the one
    in the tuple it returned; Success for a method that returns no status (as
    upstream records Unreserve and PostBind, which cannot fail, and PreScore and
    Score here, whose failures are raised)."""
    if isinstance(result, Status):
        return result.code
    if isinstance(result, tuple):
        for item in result:
            if isinstance(item, Status):
                return item.code
    return SUCCESS


def extension_point(
    point: str,
) -> Callable[
    [Callable[Concatenate[Runner, Params], Result]],
    Callable[Concatenate[Runner, Params], Result],
]:
    """Record the decorated run method's duration as `point`'s, with the status
    it returns (Error if it raises)."""

    def decorate(
        run: Callable[Concatenate[Runner, Params], Result],
    ) -> Callable[Concatenate[Runner, Params], Result]:
        @functools.wraps(run)
        def timed(runner: Runner, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
            if not runner.recording:
                return run(runner, *args, **kwargs)
            started = perf_counter()
            code = ERROR  # unless it returns
            try:
                result = run(runner, *args, **kwargs)
                code = status_code(result)
                return result
            finally:
                observe_point(runner, point, code, started)

        return timed

    return decorate


def async_extension_point(
    point: str,
) -> Callable[
    [Callable[Concatenate[Runner, Params], Awaitable[Result]]],
    Callable[Concatenate[Runner, Params], Coroutine[Any, Any, Result]],
]:
    """extension_point for a coroutine method (PreBind, Bind)."""

    def decorate(
        run: Callable[Concatenate[Runner, Params], Awaitable[Result]],
    ) -> Callable[Concatenate[Runner, Params], Coroutine[Any, Any, Result]]:
        @functools.wraps(run)
        async def timed(runner: Runner, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
            if not runner.recording:
                return await run(runner, *args, **kwargs)
            started = perf_counter()
            code = ERROR  # unless it returns
            try:
                result = await run(runner, *args, **kwargs)
                code = status_code(result)
                return result
            finally:
                observe_point(runner, point, code, started)

        return timed

    return decorate


class TimedBlock:
    """Times one extension point over a `with` block: Success, or Error if the
    block raises."""

    __slots__ = ("_point", "_runner", "_started")

    def __init__(self, runner: PointRunner, point: str) -> None:
        self._runner = runner
        self._point = point
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = perf_counter()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        observe_point(self._runner, self._point, SUCCESS if kind is None else ERROR, self._started)
