"""Measure the CEL libraries on PyPI against DRA-style device selectors.

Run as ``python -m bench.cel_libraries`` from the repository root (with the
candidates installed in the same interpreter; see docs/develop/cel-libraries.md). Each
library runs in its own subprocess (``--worker NAME``) so that imports, native
memory and failures stay apart; the parent prints the tables.

For each library that imports, the worker

1. compiles a fixed set of DRA-style selectors and checks, on a sample of
   devices, that each gives the result of a plain-Python reference;
   ``quantity()``, ``semver()``, ``.compareTo``, ``.isGreaterThan``,
   ``.isLessThan`` and ``.major()`` are registered as Python-side custom
   functions in whatever way the library allows;
2. checks error behaviour (syntax error, missing map key, non-bool results,
   undeclared function, an error raised inside a custom function);
3. times compilation per expression, and evaluation per (expression, device)
   over N devices, median of R runs; and RSS after import, after preparing the
   devices and over the timed evaluations.

A device is modelled as nested maps, as the Kubernetes DRA CEL environment sees
it: ``device.driver`` (string), ``device.attributes[domain][name]`` (bool, int,
string or version) and ``device.capacity[domain][name]`` (quantity).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.cel_workload import (
    ERROR_CASES,
    EXPRESSIONS,
    QTAG,
    VTAG,
    Quantity,
    Semver,
    k8s_compare,
    k8s_major,
    make_device,
    parse_quantity,
    parse_semver,
    tagged,
)

# --------------------------------------------------------------------------
# Adapters
# --------------------------------------------------------------------------


class CompileError(Exception):
    pass


class EvalError(Exception):
    pass


class Adapter(Protocol):
    name: str
    dist: str
    custom_functions: str
    custom_types: str
    cost_limits: str

    def prepare(self, device: dict[str, Any]) -> Any: ...

    def compile(self, expr: str) -> Any: ...

    def static_output(self, program: Any) -> str | None: ...

    def evaluate(self, program: Any, prepared: Any) -> Any: ...


def load(module: str) -> Any:
    """Import a candidate library (optional, untyped: not a project dependency)."""
    return importlib.import_module(module)


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:110]}"


@functools.cache
def _celtypes() -> Any:
    return load("celpy.celtypes")


# cel-python's custom functions: module-level and named (its transpiler refers to a
# function by module and qualified name, so lambdas and closures cannot be used).
def cp_quantity(s: Any) -> Quantity:
    return parse_quantity(str(s))


def cp_semver(s: Any) -> Semver:
    return parse_semver(str(s))


def cp_compare_to(a: Any, b: Any) -> Any:
    return _celtypes().IntType(k8s_compare(a, b))


def cp_is_greater_than(a: Any, b: Any) -> Any:
    return _celtypes().BoolType(k8s_compare(a, b) > 0)


def cp_is_less_than(a: Any, b: Any) -> Any:
    return _celtypes().BoolType(k8s_compare(a, b) < 0)


def cp_major(v: Any) -> Any:
    return _celtypes().IntType(k8s_major(v))


class CelPy:
    """cel-python (celpy): pure Python; functions are a name -> callable dict."""

    dist = "cel-python"
    custom_functions = (
        "yes: Environment.program(ast, functions={name: callable}); the transpiled"
        " runner needs module-level named functions and a patch of celpy internals"
    )
    custom_types = "yes: any Python object can be a value (Quantity/Semver passed as is)"
    cost_limits = "none in the API (no cost estimate, no runtime budget)"

    def __init__(self, transpiled: bool) -> None:
        celpy = load("celpy")
        evaluation = load("celpy.evaluation")
        self.celpy = celpy
        self.celtypes = load("celpy.celtypes")
        self.name = "cel-python (transpiled)" if transpiled else "cel-python (interpreted)"
        runner = celpy.CompiledRunner if transpiled else celpy.InterpretedRunner
        self.env = celpy.Environment(runner_class=runner)
        self.functions: dict[str, Callable[..., Any]] = {
            "quantity": cp_quantity,
            "semver": cp_semver,
            "compareTo": cp_compare_to,
            "isGreaterThan": cp_is_greater_than,
            "isLessThan": cp_is_less_than,
            "major": cp_major,
        }
        if transpiled:
            # The transpiler emits `<module>.<qualname>` for a custom function and execs
            # it in celpy.evaluation's globals, where no module of ours is bound: without
            # this patch of celpy's internals every custom function is a NameError.
            vars(evaluation)[cp_quantity.__module__] = sys.modules[cp_quantity.__module__]

    def prepare(self, device: dict[str, Any]) -> Any:
        def conv(v: Any) -> Any:
            if isinstance(v, Quantity | Semver):
                return v
            if isinstance(v, dict):
                return self.celtypes.MapType(
                    {self.celtypes.StringType(k): conv(x) for k, x in v.items()}
                )
            return self.celpy.json_to_cel(v)

        return {"device": conv(device)}

    def compile(self, expr: str) -> Any:
        try:
            return self.env.program(self.env.compile(expr), functions=self.functions)
        except Exception as e:
            raise CompileError(_short(e)) from e

    def static_output(self, program: Any) -> str | None:
        return None

    def evaluate(self, program: Any, prepared: Any) -> Any:
        try:
            v = program.evaluate(prepared)
        except Exception as e:
            raise EvalError(_short(e)) from e
        if isinstance(v, Exception):  # celpy may return an error value
            raise EvalError(_short(v))
        if isinstance(v, self.celtypes.BoolType):
            return bool(v)
        if isinstance(v, self.celtypes.IntType):
            return int(v)
        return v


class CelExprPython:
    """cel-expr-python: Google's cel-cpp runtime, typed declarations."""

    name = "cel-expr-python"
    dist = "cel-expr-python"
    custom_functions = "yes: FunctionDecl/Overload with typed parameters and a Python impl"
    custom_types = (
        "no opaque types (AbstractType -> 'Unimplemented type', Python objects"
        " -> 'Non-CEL value type'); used tagged map(string, string)"
    )
    cost_limits = "none in the Python API (cel-cpp has an iteration budget; not exposed)"

    def __init__(self) -> None:
        cel = load("cel_expr_python.cel")
        self.cel = cel
        t = cel.Type
        qv = t.Map(t.STRING, t.STRING)  # {"$quantity": "40Gi"} or {"$semver": "1.2.3"}

        def decl(name: str, ret: Any, params: list[Any], member: bool, impl: Any) -> Any:
            ov = cel.Overload(f"{name}_{len(params)}", ret, params, is_member=member, impl=impl)
            return cel.FunctionDecl(name, [ov])

        self.env = cel.NewEnv(
            variables={"device": t.Map(t.STRING, t.DYN)},
            functions=[
                decl("quantity", qv, [t.STRING], False, lambda s: {QTAG: s}),
                decl("semver", qv, [t.STRING], False, lambda s: {VTAG: s}),
                decl("compareTo", t.INT, [qv, qv], True, k8s_compare),
                decl("isGreaterThan", t.BOOL, [qv, qv], True, lambda a, b: k8s_compare(a, b) > 0),
                decl("isLessThan", t.BOOL, [qv, qv], True, lambda a, b: k8s_compare(a, b) < 0),
                decl("major", t.INT, [qv], True, k8s_major),
            ],
        )

    def prepare(self, device: dict[str, Any]) -> Any:
        return self.env.Activation({"device": tagged(device)})

    def compile(self, expr: str) -> Any:
        try:
            return self.env.compile(expr)
        except Exception as e:
            raise CompileError(_short(e)) from e

    def static_output(self, program: Any) -> str | None:
        return str(program.return_type().name())

    def evaluate(self, program: Any, prepared: Any) -> Any:
        try:
            v = program.eval(prepared)
        except Exception as e:
            raise EvalError(_short(e)) from e
        if v.type() == self.cel.Type.ERROR:  # errors come back as values
            raise EvalError(f"error value: {str(v.value())[:110]}")
        return v.value()


class CommonExpressionLanguage:
    """common-expression-language: Rust `cel` crate; untyped, functions by name."""

    name = "common-expression-language"
    dist = "common-expression-language"
    custom_functions = "yes: Context(functions={name: callable}); x.f(a) calls f(x, a)"
    custom_types = (
        "no: Python objects fail conversion ('Failed to convert Python object');"
        " used tagged map(string, string)"
    )
    cost_limits = "none in the API"

    def __init__(self) -> None:
        self.cel = load("cel")
        self.functions: dict[str, Callable[..., Any]] = {
            "quantity": lambda s: {QTAG: s},
            "semver": lambda s: {VTAG: s},
            "compareTo": k8s_compare,
            "isGreaterThan": lambda a, b: k8s_compare(a, b) > 0,
            "isLessThan": lambda a, b: k8s_compare(a, b) < 0,
            "major": k8s_major,
        }

    def prepare(self, device: dict[str, Any]) -> Any:
        return self.cel.Context(variables={"device": tagged(device)}, functions=self.functions)

    def compile(self, expr: str) -> Any:
        try:
            return self.cel.compile(expr)
        except Exception as e:
            raise CompileError(_short(e)) from e

    def static_output(self, program: Any) -> str | None:
        return None

    def evaluate(self, program: Any, prepared: Any) -> Any:
        try:
            return program.execute(prepared)
        except Exception as e:
            raise EvalError(_short(e)) from e


ADAPTERS: dict[str, Callable[[], Adapter]] = {
    "cel-python-interp": lambda: CelPy(transpiled=False),
    "cel-python-transpiled": lambda: CelPy(transpiled=True),
    "cel-expr-python": CelExprPython,
    "common-expression-language": CommonExpressionLanguage,
}

# --------------------------------------------------------------------------
# Worker: one library, results as JSON on stdout
# --------------------------------------------------------------------------


def _rss_kib() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Options:
    devices: int
    runs: int
    sample: int


def run_worker(key: str, opts: Options) -> dict[str, Any]:
    rss0 = _rss_kib()
    t0 = time.perf_counter()
    try:
        ad = ADAPTERS[key]()
    except Exception as e:
        return {"key": key, "error": _short(e)}
    out: dict[str, Any] = {
        "key": key,
        "name": ad.name,
        "dist": ad.dist,
        "import_s": time.perf_counter() - t0,
        "import_rss_kib": _rss_kib() - rss0,
        "custom_functions": ad.custom_functions,
        "custom_types": ad.custom_types,
        "cost_limits": ad.cost_limits,
    }

    # Capability: compile, and the reference result on a sample of devices.
    sample = [make_device(i) for i in range(opts.sample)]
    sample_p = [ad.prepare(d) for d in sample]
    caps: list[dict[str, Any]] = []
    programs: dict[str, Any] = {}
    for eid, expr, ref, k8s in EXPRESSIONS:
        row: dict[str, Any] = {"id": eid, "expr": expr, "k8s_functions": k8s}
        try:
            prog = ad.compile(expr)
        except CompileError as e:
            row.update(compiled=False, ok=False, detail=str(e))
            caps.append(row)
            continue
        row["compiled"] = True
        bad = 0
        detail = ""
        for d, p in zip(sample, sample_p, strict=True):
            want = ref(d)
            try:
                got = ad.evaluate(prog, p)
            except EvalError as e:
                bad += 1
                detail = detail or str(e)
                continue
            if type(got) is not bool or got != want:
                bad += 1
                detail = detail or f"got {got!r}, want {want!r}"
        row.update(ok=bad == 0, wrong=bad, detail=detail)
        if bad == 0:
            programs[eid] = prog
        caps.append(row)
    out["capability"] = caps

    # Error behaviour.
    errs: list[dict[str, Any]] = []
    for eid, expr, k8s_does in ERROR_CASES:
        row = {"id": eid, "expr": expr, "kubernetes": k8s_does}
        try:
            prog = ad.compile(expr)
        except CompileError as e:
            row.update(stage="compile error", detail=str(e))
            errs.append(row)
            continue
        st = ad.static_output(prog)
        try:
            got = ad.evaluate(prog, sample_p[0])
        except EvalError as e:
            row.update(stage="runtime error", detail=str(e), static_type=st)
        else:
            row.update(stage=f"returns {type(got).__name__} {got!r}", detail="", static_type=st)
        errs.append(row)
    out["errors"] = errs

    # Speed: compile time per expression.
    compile_us: dict[str, float] = {}
    for eid, expr, _ref, _k8s in EXPRESSIONS:
        if eid not in programs:
            continue
        reps = 20
        times = []
        for _ in range(opts.runs):
            t = time.perf_counter()
            for _ in range(reps):
                ad.compile(expr)
            times.append((time.perf_counter() - t) / reps)
        compile_us[eid] = statistics.median(times) * 1e6
    out["compile_us"] = compile_us

    # Speed: prepare devices once (a scheduler would convert each device once).
    rss1 = _rss_kib()
    t = time.perf_counter()
    prepared = [ad.prepare(make_device(i)) for i in range(opts.devices)]
    out["prepare_us"] = (time.perf_counter() - t) / opts.devices * 1e6
    out["devices_rss_kib"] = _rss_kib() - rss1

    # Speed: evaluation per (expression, device), median of runs.
    eval_us: dict[str, float] = {}
    rss2 = _rss_kib()
    for eid, prog in programs.items():
        ev = ad.evaluate
        for p in prepared[:200]:  # warm-up
            ev(prog, p)
        times = []
        for _ in range(opts.runs):
            t = time.perf_counter()
            for p in prepared:
                ev(prog, p)
            times.append((time.perf_counter() - t) / len(prepared))
        eval_us[eid] = statistics.median(times) * 1e6
    out["eval_us"] = eval_us
    out["evals"] = len(programs) * (opts.runs * len(prepared) + min(200, len(prepared)))
    out["eval_rss_kib"] = _rss_kib() - rss2
    out["max_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


# --------------------------------------------------------------------------
# Package metadata
# --------------------------------------------------------------------------


def package_info(dist: str) -> dict[str, Any]:
    try:
        md = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return {"dist": dist, "installed": False}
    meta: dict[str, Any] = md.metadata.json
    lic = meta.get("license_expression") or meta.get("license") or ""
    if not lic:
        classifiers = [c for c in meta.get("classifier", []) if c.startswith("License ::")]
        lic = classifiers[0].rsplit("::", 1)[-1].strip() if classifiers else ""
    if not lic:
        for f in md.files or []:
            if "LICENSE" in f.name.upper():
                text = Path(str(md.locate_file(f))).read_text(errors="replace")
                first = " ".join(text.split()[:3])
                lic = f"(license file) {first}"
                break
    wheel = md.read_text("WHEEL") or ""
    tags = [ln.split(":", 1)[1].strip() for ln in wheel.splitlines() if ln.startswith("Tag:")]
    urls = [u.split(",", 1)[-1].strip() for u in meta.get("project_url", [])]
    return {
        "dist": dist,
        "installed": True,
        "version": md.version,
        "license": lic,
        "requires_python": meta.get("requires_python", ""),
        "requires": [r for r in md.requires or [] if "extra ==" not in r],
        "wheel_tags": tags,
        "urls": urls,
        # Core metadata carries no release date.
        "release_date": "not in metadata",
    }


def pypi_versions(dist: str) -> str:
    """The versions PyPI lists, through pip (a network call; empty if it fails)."""
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", dist],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for ln in r.stdout.splitlines():
        if ln.startswith("Available versions:"):
            return ln.split(":", 1)[1].strip()
    return ""


# --------------------------------------------------------------------------
# Parent: run the workers, print tables
# --------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in r] for r in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def report(results: list[dict[str, Any]], infos: Mapping[str, dict[str, Any]]) -> str:
    ok = [r for r in results if "error" not in r]
    parts: list[str] = []
    parts.append("## Libraries\n")
    parts.append(
        _table(
            ["library", "version", "license", "requires-python", "wheel tags", "PyPI versions"],
            [
                [
                    i["dist"],
                    i.get("version", "not installed"),
                    i.get("license", ""),
                    i.get("requires_python", ""),
                    " ".join(i.get("wheel_tags", [])),
                    i.get("pypi_versions", "") or "?",
                ]
                for i in infos.values()
            ],
        )
    )
    for r in results:
        if "error" in r:
            parts.append(f"\n{r['key']}: could not load: {r['error']}")
    names = [r["name"] for r in ok]
    parts.append("\n## Capability (result matches the reference on the sample devices)\n")
    rows: list[list[object]] = []
    for idx, (eid, _expr, _ref, k8s) in enumerate(EXPRESSIONS):
        row: list[object] = [eid + (" *" if k8s else "")]
        for r in ok:
            c = r["capability"][idx]
            row.append("ok" if c["ok"] else ("no compile" if not c["compiled"] else "WRONG"))
        rows.append(row)
    rows.append(
        ["passed", *[f"{sum(c['ok'] for c in r['capability'])}/{len(EXPRESSIONS)}" for r in ok]]
    )
    parts.append(_table(["expression", *names], rows))
    parts.append("\n(* uses quantity()/semver() registered as Python-side custom functions)")
    fails = [(r["name"], c) for r in ok for c in r["capability"] if not c["ok"]]
    for name, c in fails:
        parts.append(f"- {name} / {c['id']}: {c['detail']}")

    parts.append("\n## Error behaviour\n")
    rows = []
    for idx, (eid, _expr, k8s_does) in enumerate(ERROR_CASES):
        row = [eid, k8s_does]
        for r in ok:
            e = r["errors"][idx]
            st = e.get("static_type")
            row.append(e["stage"] + (f" (static type {st})" if st else ""))
        rows.append(row)
    parts.append(_table(["case", "Kubernetes", *names], rows))
    for r in ok:
        for e in r["errors"]:
            if e["detail"]:
                parts.append(f"- {r['name']} / {e['id']}: {e['detail']}")

    parts.append("\n## Extensibility\n")
    parts.append(
        _table(
            ["library", "custom functions", "custom types", "cost limits"],
            [[r["name"], r["custom_functions"], r["custom_types"], r["cost_limits"]] for r in ok],
        )
    )

    parts.append("\n## Speed (µs; median of runs)\n")
    rows = []
    for eid, _expr, _ref, _k8s in EXPRESSIONS:
        row = [eid]
        for r in ok:
            row.append(f"{_fmt(r['compile_us'].get(eid))} / {_fmt(r['eval_us'].get(eid))}")
        rows.append(row)

    def med(r: dict[str, Any], k: str) -> str:
        v = list(r[k].values())
        return _fmt(statistics.median(v)) if v else "-"

    rows.append(
        ["median compile / eval", *[f"{med(r, 'compile_us')} / {med(r, 'eval_us')}" for r in ok]]
    )
    rows.append(["prepare per device", *[_fmt(r["prepare_us"]) for r in ok]])
    rows.append(["import (ms)", *[_fmt(r["import_s"] * 1e3) for r in ok]])
    parts.append(_table(["compile / eval per device", *names], rows))

    parts.append("\n## Memory (MiB)\n")
    parts.append(
        _table(
            ["", *names],
            [
                ["RSS added by import", *[f"{r['import_rss_kib'] / 1024:.1f}" for r in ok]],
                [
                    "RSS added by prepared devices",
                    *[f"{r['devices_rss_kib'] / 1024:.1f}" for r in ok],
                ],
                [
                    "RSS growth over the timed evaluations",
                    *[f"{r['eval_rss_kib'] / 1024:.1f} ({r['evals']:,} evals)" for r in ok],
                ],
                ["peak RSS of the worker", *[f"{r['max_rss_kib'] / 1024:.1f}" for r in ok]],
            ],
        )
    )
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--devices", type=int, default=10_000, help="devices per timing run")
    ap.add_argument("--runs", type=int, default=5, help="timing runs (median taken)")
    ap.add_argument("--sample", type=int, default=120, help="devices for the capability check")
    ap.add_argument("--libs", default=",".join(ADAPTERS), help="comma-separated adapter keys")
    ap.add_argument("--no-pypi", action="store_true", help="skip `pip index versions`")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    opts = Options(devices=args.devices, runs=args.runs, sample=args.sample)

    if args.worker:
        print(json.dumps(run_worker(args.worker, opts)))
        return 0

    print(
        f"# CEL libraries: {os.cpu_count()} CPUs, Python {platform.python_version()},"
        f" {platform.machine()}, devices={opts.devices}, runs={opts.runs}, sample={opts.sample}\n"
    )
    infos: dict[str, dict[str, Any]] = {}
    for dist in ("cel-python", "cel-expr-python", "common-expression-language"):
        infos[dist] = package_info(dist)
        if infos[dist]["installed"] and not args.no_pypi:
            infos[dist]["pypi_versions"] = pypi_versions(dist)
    results: list[dict[str, Any]] = []
    for key in args.libs.split(","):
        cmd = [sys.executable, "-m", "bench.cel_libraries", "--worker", key]
        cmd += ["--devices", str(opts.devices)]
        cmd += ["--runs", str(opts.runs), "--sample", str(opts.sample)]
        t = time.perf_counter()
        root = Path(__file__).resolve().parents[1]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
        print(f"... {key}: {time.perf_counter() - t:.0f}s", file=sys.stderr)
        if r.returncode != 0 or not r.stdout.strip():
            results.append({"key": key, "error": (r.stderr.strip().splitlines() or ["?"])[-1]})
            continue
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print(report(results, infos))
    if args.json:
        args.json.write_text(json.dumps({"infos": infos, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
