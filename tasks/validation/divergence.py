"""A candidate's behavioural divergence from the original on any function (methods, properties,
nested functions, generators, computed arguments), by shadow execution
(``equisa_core.validation.divergence``): ONE sandboxed run of the target's covering tests, passing
and failing, on the original program, with the shadow plugin
(the package ``equisa_core/validation/shadow_plugin/``, written into the run's copy as ``equisa_shadow/``
with the core's input rules among its modules, ``shadow_plugin_files``)
calling the candidate's version of the target next to each of its calls.

``measure_divergence`` is the entry point: a ``DivergenceResult`` with the report, or None and why
(no test covers the target, or its code cannot be found in the original or in the candidate). The
run is a cached ``run-shadow`` task; its tests get their own time limits plus the plugin's budget
per test (``ShadowLimits.test_budget_s``), and the run stops after ``DIVERGENCE_WALL_CLOCK_S``
(what was observed until then is kept: the plugin writes record by record).
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import timedelta
from typing import Any

from prefect import Task, task
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.states import State

from equisa_core.common.loop import Frozen
from equisa_core.common.time_limits import limit_for, slowest_finished
from equisa_core.testgen.raised_on_purpose import raised_on_purpose
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.divergence import DivergenceReport, ShadowLimits, ShadowOutput, read_shadow_output
from equisa_core.validation.generated_tests import is_testgen_test
from equisa_core.validation.shadow_files import shadow_plugin_files
from tasks.run.patched_function import file_of, qualname_of
from tasks.run.prepared_run import focused_request
from tasks.sandbox.contract import WRITER_EXIT_GRACE_S, RunRequest, SandboxInfrastructureError
from tasks.sandbox.run_tests import backend_key, make_sandbox
from tasks.validation.checks import ValidationContext

__all__ = ["DIVERGENCE_WALL_CLOCK_S", "SHADOW_MODULE", "SHADOW_CONFIG_PATH", "DivergenceResult",
           "measure_divergence", "shadow_request", "run_shadow"]

#: The shadow run stops after this long; calls not compared by then do not count.
DIVERGENCE_WALL_CLOCK_S = 90.0
#: The plugin's module name in the run's copy (``PYTEST_PLUGINS``), and its configuration's path.
SHADOW_MODULE = "equisa_shadow"
SHADOW_CONFIG_PATH = "equisa_shadow_config.json"
#: The exceptions that, raised by the function itself, mean it checks its inputs (``_checked_errors``).
CHECKED_ERRORS = frozenset({"TypeError", "ValueError"})


class DivergenceResult(Frozen):
    """A candidate's divergence report on one target, or None and why there is none."""

    report: DivergenceReport | None
    reason: str = ""


@functools.cache
def _plugin_files() -> dict[str, str]:
    """The shadow plugin package's modules, for the sandbox's copy: path in the run's copy
    (``equisa_shadow/<module>.py``) -> source, in name order (``shadow_plugin_files``: the core's input
    rules among them). Read once per process (it was read twice per candidate); not to be mutated."""
    return shadow_plugin_files(SHADOW_MODULE)


def _checked_errors(source: str | None, qualname: str) -> list[str]:
    """The input errors (``CHECKED_ERRORS``) the original function raises itself: it checks its
    inputs, and the shadow plugin probes whether the candidate still rejects what it rejected."""
    if source is None:
        return []
    try:
        return sorted(raised_on_purpose(source, qualname) & CHECKED_ERRORS)
    except SyntaxError:
        return []


def _original_text(ctx: ValidationContext, file: str) -> str | None:
    """The target file's text as the suite's runs see it (the overlay's, else the workspace copy's)."""
    if file in ctx.found.overlay:
        return ctx.found.overlay[file]
    try:
        return (ctx.found.prepared.workspace.root / file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def covering_tests(target: str, ctx: ValidationContext) -> list[str]:
    """The suite's own tests that run ``target`` and passed or failed steadily, in name order."""
    trace = ctx.found.trace
    return sorted(t for t in trace.coverage().get(target, set()) - trace.flaky
                  if not is_testgen_test(t) and (t in ctx.passing or t in ctx.failing))


def shadow_request(candidate: PatchCandidate, target: str, ctx: ValidationContext,
                   limits: ShadowLimits | None = None) -> RunRequest | str:
    """The run of ``target``'s covering tests on the original program with the shadow plugin
    comparing ``candidate``'s version; or why there is none (no covering test, no readable file)."""
    limits = limits or ShadowLimits()
    node = ctx.nodes.get(target)
    if node is None or not node.file:
        return f"{target} is not a function of the traced suite"
    tests = covering_tests(target, ctx)
    if not tests:
        return f"no test that passes or fails steadily covers {target}"
    file = file_of(node)
    text = candidate.files.get(file) or _original_text(ctx, file)
    if text is None:
        return f"{file} cannot be read"
    passing = ctx.passing
    qualname = qualname_of(node)
    config = {"file": file, "qualname": qualname, "candidate": text,
              "passing": [t for t in tests if t in passing],
              "failing": [t for t in tests if t not in passing],
              "on_purpose": _checked_errors(_original_text(ctx, file), qualname), **limits.model_dump()}
    prepared = ctx.found.prepared
    base = prepared.base
    slowest = slowest_finished(t for t in ctx.found.trace.tests if t.test_id in set(tests))
    run_limits = base.limits.model_copy(update={
        "test_timeout_s": limit_for(slowest) + limits.test_budget_s, "per_test": {},
        "wall_clock_s": min(base.limits.wall_clock_s, DIVERGENCE_WALL_CLOCK_S)})
    plugins = ",".join(p for p in (base.env.get("PYTEST_PLUGINS", ""), SHADOW_MODULE) if p)
    overlay = {**ctx.found.overlay, **_plugin_files(), SHADOW_CONFIG_PATH: json.dumps(config)}
    env = {**base.env, "PYTEST_PLUGINS": plugins, "EQUISA_SHADOW_CONFIG": SHADOW_CONFIG_PATH}
    request = focused_request(prepared, tests, overlay, trace=False, record=(), mutants=(), shard=None,
                              limits=run_limits, env=env)
    return request.model_copy(update={"exit_grace_s": WRITER_EXIT_GRACE_S})  # it writes at unconfigure


def _shadow_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    request: RunRequest = parameters["request"]
    plugin = hashlib.sha256(json.dumps(_plugin_files(), sort_keys=True).encode()).hexdigest()[:16]
    backend = backend_key(parameters.get("backend", "local"), parameters.get("docker_image"))
    return f"run-shadow-{plugin}-" + request.cache_key(backend, parameters.get("interpreter_version", ""))


def _infrastructure_only(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only when the sandbox itself failed."""
    try:
        state.result(raise_on_failure=True)
    except SandboxInfrastructureError:
        return True
    except Exception:
        return False
    return False


@task(
    name="run-shadow",
    cache_key_fn=_shadow_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=2,
    retry_delay_seconds=[2, 10],
    retry_condition_fn=_infrastructure_only,
)
def run_shadow(request: RunRequest, backend: str = "local", interpreter_version: str = "",
               docker_image: str | None = None) -> ShadowOutput:
    """One sandboxed run of ``request`` (``shadow_request``) and the shadow plugin's records."""
    run = make_sandbox(backend, docker_image).run(request)
    return read_shadow_output(run.probe_output.splitlines())


def measure_divergence(candidate: PatchCandidate, target: str, ctx: ValidationContext,
                       limits: ShadowLimits | None = None) -> DivergenceResult:
    """``candidate``'s divergence from the original on ``target`` (``DivergenceReport``), from one
    shadow run of the target's covering tests; the report is None, with the reason, when no test
    covers the target or its code cannot be found in the original or in the candidate."""
    request = shadow_request(candidate, target, ctx, limits)
    if isinstance(request, str):
        return DivergenceResult(report=None, reason=request)
    output = run_shadow.with_options(refresh_cache=ctx.no_cache or None)(
        request, backend=ctx.sandbox, interpreter_version=ctx.found.prepared.interpreter_version,
        docker_image=ctx.docker_image)
    if not output.found:
        return DivergenceResult(report=None, reason=output.why)
    return DivergenceResult(report=output.report())
