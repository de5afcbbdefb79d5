"""Where a sweep's variations run: local worker processes, or a Ray cluster.

Both engines run the same task (task.run_variation), hand each finished row to
the driver as it comes, send the base cluster to each worker once, and retry a
variation whose run failed or whose worker died:

- LocalEngine (the default, no setup): a pool of worker processes forked from
  a server process (forkserver), so that a worker begins with nothing of the
  driver's threads or event loop; the base goes to each worker once, as the
  pool's initializer argument. A worker that dies breaks the pool: the variations it had not
  finished are run again in a new pool, each try counted.
- RayEngine (`--ray-address`): Ray is an optional extra (`kubesched[ray]`),
  imported on use. The base is put in the object store once and each worker
  keeps the one it last read; Ray retries a task whose worker died and, with
  retry_exceptions, one that raised.

A variation that fails every try becomes a row with its error, so a sweep
never loses one silently; the driver's results file (store.py) makes each count
once.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from typing import Any, Protocol

from kubesched.sweep.task import (
    SweepBase,
    VariationResult,
    VariationSetup,
    failed_result,
    run_variation,
)

log = logging.getLogger("kubesched.sweep")

OnResult = Callable[[VariationResult], object]
DEFAULT_RETRIES = 3


class Engine(Protocol):
    name: str

    def run(self, base: SweepBase, setups: Sequence[VariationSetup], on_result: OnResult) -> None:
        """Run every setup, calling ON_RESULT in the driver with each row as it comes."""
        ...


# --- local worker processes ------------------------------------------------------------

_WORKER_BASE: SweepBase | None = None


def _init_worker(base: SweepBase) -> None:
    global _WORKER_BASE
    _WORKER_BASE = base


def _run_in_worker(setup: VariationSetup) -> VariationResult:
    assert _WORKER_BASE is not None, "the worker was started without its base"
    return run_variation(_WORKER_BASE, setup)


def _context() -> BaseContext:
    """Workers forked from a server that imported the task's modules once (forkserver):
    a worker starts in milliseconds with nothing of the driver's threads or event
    loop, and a pool made again after a worker died costs little."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["kubesched.sweep.task"])
    return context


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


class LocalEngine:
    """WORKERS local processes (1: in the driver's own process, no pool)."""

    name = "local"

    def __init__(self, workers: int, retries: int = DEFAULT_RETRIES) -> None:
        self.workers = workers
        self.retries = retries

    def run(self, base: SweepBase, setups: Sequence[VariationSetup], on_result: OnResult) -> None:
        if self.workers <= 1:
            self._run_here(base, setups, on_result)
            return
        pending = {s.variation.id: s for s in setups}
        tries: Counter[str] = Counter()
        while pending:
            # A new pool only when a worker died and broke the last one.
            with ProcessPoolExecutor(
                max_workers=min(self.workers, len(pending)),
                mp_context=_context(),
                initializer=_init_worker,
                initargs=(base,),
            ) as pool:
                running: dict[Future[VariationResult], VariationSetup] = {
                    pool.submit(_run_in_worker, s): s for s in pending.values()
                }
                broken = False
                while running:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        setup = running.pop(future)
                        try:
                            row = future.result()
                        except BrokenProcessPool as exc:
                            # A worker died (killed, out of memory): what it and the
                            # others had not finished goes to a new pool.
                            broken = True
                            self._failed(setup, exc, tries, pending, on_result)
                            continue
                        except Exception as exc:
                            if self._failed(setup, exc, tries, pending, on_result) and not broken:
                                running[pool.submit(_run_in_worker, setup)] = setup
                            continue
                        del pending[setup.variation.id]
                        on_result(row)

    def _failed(
        self,
        setup: VariationSetup,
        exc: BaseException,
        tries: Counter[str],
        pending: dict[str, VariationSetup],
        on_result: OnResult,
    ) -> bool:
        """Count a failed try of SETUP: True when it is to run again, else its error
        row is handed on."""
        key = setup.variation.id
        tries[key] += 1
        if tries[key] > self.retries:
            del pending[key]
            text = f"failed {tries[key]} times; last: {_error_text(exc)}"
            on_result(failed_result(setup.variation, text))
            return False
        log.warning("variation %s failed (%s); running it again", key, _error_text(exc))
        return True

    def _run_here(
        self, base: SweepBase, setups: Sequence[VariationSetup], on_result: OnResult
    ) -> None:
        for setup in setups:
            tries = 0
            while True:
                try:
                    row = run_variation(base, setup)
                except Exception as exc:
                    tries += 1
                    if tries > self.retries:
                        text = f"failed {tries} times; last: {_error_text(exc)}"
                        row = failed_result(setup.variation, text)
                        break
                    log.warning("variation %s failed (%s); again", setup.variation.id, exc)
                    continue
                break
            on_result(row)


# --- Ray ---------------------------------------------------------------------------------

# A Ray worker's last base: (the object's id, the base), read once per worker.
_RAY_BASE: tuple[str, SweepBase] | None = None


def _run_on_ray(base_ref: list[Any], setup: VariationSetup) -> VariationResult:
    """The Ray task. The base's ObjectRef comes inside a list, so that Ray does not
    fetch and deserialise it for every task: a worker reads it once."""
    import ray

    global _RAY_BASE
    ref = base_ref[0]
    if _RAY_BASE is None or _RAY_BASE[0] != ref.hex():
        _RAY_BASE = (ref.hex(), ray.get(ref))
    return run_variation(_RAY_BASE[1], setup)


class RayError(RuntimeError):
    """Ray cannot be used: str() is the one line to print."""


class RayEngine:
    """The variations as Ray tasks on the cluster at ADDRESS (`ray://host:10001`, or
    `host:6379` from a machine of the cluster, or `auto`)."""

    name = "ray"

    def __init__(self, address: str, retries: int = DEFAULT_RETRIES) -> None:
        self.address = address
        self.retries = retries

    def run(self, base: SweepBase, setups: Sequence[VariationSetup], on_result: OnResult) -> None:
        try:
            import ray
        except ImportError:
            raise RayError("--ray-address needs Ray: pip install 'kubesched[ray]'") from None
        try:
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:
            raise RayError(f"cannot connect to Ray at {self.address}: {_error_text(exc)}") from None
        try:
            base_ref = ray.put(base)
            task = ray.remote(max_retries=self.retries, retry_exceptions=True)(_run_on_ray)
            refs = {task.remote([base_ref], s): s for s in setups}
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    setup = refs.pop(ref)
                    try:
                        row = ray.get(ref)
                    except Exception as exc:
                        text = f"failed {self.retries + 1} times; last: {_error_text(exc)}"
                        row = failed_result(setup.variation, text)
                    on_result(row)
        finally:
            ray.shutdown()
