"""The errors the runtime raises for a plugin's failure, with the texts upstream's
runtime wraps them in (framework/runtime/framework.go)."""

from __future__ import annotations

import traceback

from kubesched.framework import interfaces as ifc
from kubesched.framework.status import Code, Status

# How upstream's runtime wraps a plugin's error, by extension point (framework.go:
# RunPreFilterPlugins, RunFilterPlugins, RunPreFilterExtension*, RunPreScorePlugins,
# RunScorePlugins, RunReservePluginsReserve, RunPermitPlugins, RunPreBindPlugins,
# RunBindPlugins); the text reaches the pod's FailedScheduling message.
_ERROR_TEXTS = {
    "PreFilter": 'running PreFilter plugin "{plugin}": {cause}',
    "Filter": 'running "{plugin}" filter plugin: {cause}',
    "PreFilterExtension AddPod": 'running AddPod on PreFilter plugin "{plugin}": {cause}',
    "PreFilterExtension RemovePod": 'running RemovePod on PreFilter plugin "{plugin}": {cause}',
    "PreScore": 'running PreScore plugin "{plugin}": {cause}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {cause}',
    "Reserve": 'running Reserve plugin "{plugin}": {cause}',
    "Permit": 'running Permit plugin "{plugin}": {cause}',
    "PreBind": 'running PreBind plugin "{plugin}": {cause}',
    "Bind": 'running Bind plugin "{plugin}": {cause}',
}


def plugin_error_text(plugin: str, point: str, cause: BaseException | str) -> str:
    """The error text upstream's runtime gives a plugin's error at `point`."""
    template = _ERROR_TEXTS.get(point, 'running "{plugin}" {point} plugin: {cause}')
    return template.format(plugin=plugin, point=point, cause=cause)


class PluginError(Exception):
    """A plugin raised or returned Error: the attempt fails and the pod backs off."""

    def __init__(self, plugin: str, point: str, cause: BaseException | str):
        self.plugin = plugin
        self.point = point
        self.cause = cause
        super().__init__(plugin_error_text(plugin, point, cause))

    @property
    def location(self) -> str:
        """Where the plugin raised, "file:line" ("" for an Error status): the message
        is upstream's text, which names no place; the log line adds this."""
        if not isinstance(self.cause, BaseException):
            return ""
        frames = traceback.extract_tb(self.cause.__traceback__)
        return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def wrapped_error(status: Status, plugin: str, point: str) -> Status:
    """An Error status as the runtime returns it: its text wrapped as upstream wraps it
    (the cause kept, for the binding cycle's checks); other statuses as they are."""
    if status.code != Code.ERROR:
        return status.with_plugin(plugin)
    wrapped = Status.as_error(plugin_error_text(plugin, point, status.message()), plugin)
    if status.error is not None:
        wrapped.error = status.error  # e.g. BindConflict: nothing to retry
    return wrapped


class ScoreRangeError(PluginError):
    pass


def score_range_error(plugin: str, bad: int) -> ScoreRangeError:
    """RunScorePlugins' error for a score out of [MinNodeScore, MaxNodeScore]."""
    return ScoreRangeError(
        plugin,
        "Score",
        f"plugin {plugin!r} returns an invalid score {bad}, it should be in "
        f"the range of [{ifc.MIN_NODE_SCORE}, {ifc.MAX_NODE_SCORE}] after normalizing",
    )
