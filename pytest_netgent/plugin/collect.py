"""Collection of ``*.netgent.yaml`` files into test items, and their failure reports."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import (
    NetgentError,
    ReplayError,
    WorkflowSpecError,
    heal_command,
)
from ..replay.diagnosis import clear_screenshots
from ..replay.run import RunResult
from ..workflow import store
from ..workflow.semantics import unset_error
from ..workflow.spec import (
    BadDocument,
    LoadedWorkflow,
    Scalar,
    ScenarioDocument,
    load_documents,
)
from .keys import METADATA_PROPERTY, result_key
from .marks import item_marks
from .reporting import ReportsErrors
from .thirdparty import attempt, attempt_folder, repeat_count, repeat_ids, repeat_step_key

if TYPE_CHECKING:
    from ..replay.run import TimelineEvent
    from ..replay.runner import NetgentBrowser
    from ..scenario.spec import LoadedScenario
    from ..synthesis import Synthesiser


class WorkflowFile(pytest.File):
    """A workflow file: one item per workflow and parameter combination.

    A document that fails to load becomes one item that errors with the file, line and
    fix, so the rest of the file and of the session still runs.
    """

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        if twin := _twin(self.path):
            error = WorkflowSpecError(
                self.path,
                1,
                f"{self.path.name} and {twin.name} would share the cached states in "
                f"__netgent__/{store.file_stem(self.path)}/: rename one of the two files",
            )
            return [WorkflowErrorItem.from_parent(self, name=self.path.name, error=error, line=1)]
        for doc in load_documents(self.path):
            if isinstance(doc, BadDocument):
                items.append(
                    WorkflowErrorItem.from_parent(
                        self, name=doc.name, error=doc.error, line=doc.line
                    )
                )
                continue
            if isinstance(doc, ScenarioDocument):
                items += self._scenario_items(doc)
                continue
            items += self._items(WorkflowItem, doc, doc.workflow, _make_test)
        return self._apart(items)

    def _apart(self, items: list[pytest.Item]) -> list[pytest.Item]:
        """Two items of one node id would be one item to pytest and xdist (reports,
        captures, artifact folders and heal commands merged, an item silently lost): the
        second becomes an error item of its own, named ``name#2``, that names both."""
        first: dict[str, pytest.Item] = {}
        seen: dict[str, int] = {}
        out: list[pytest.Item] = []
        for item in items:
            other = first.setdefault(item.nodeid, item)
            seen[item.nodeid] = seen.get(item.nodeid, 0) + 1
            if other is not item:
                line = _line(item)
                error = WorkflowSpecError(
                    self.path,
                    line,
                    f"items {other.name!r} (line {_line(other)}) and {item.name!r} (line "
                    f"{line}) would both have the node id {item.nodeid!r}, and one of them "
                    "would never run: give the workflows names and parameter values that "
                    "tell their items apart",
                )
                item = WorkflowErrorItem.from_parent(
                    self, name=f"{item.name}#{seen[item.nodeid]}", error=error, line=line
                )
            out.append(item)
        return out

    def _scenario_items(self, doc: ScenarioDocument) -> list[pytest.Item]:
        from ..scenario.spec import load_scenario
        from .scenarios import ScenarioItem, make_test

        try:
            loaded = load_scenario(doc)
            _inside(loaded, self.config.rootpath)
        except WorkflowSpecError as exc:
            line = exc.line or doc.line
            return [WorkflowErrorItem.from_parent(self, name=doc.name, error=exc, line=line)]
        return self._items(ScenarioItem, loaded, loaded.scenario, make_test)

    def _items(
        self,
        kind: type[pytest.Function],
        loaded: LoadedWorkflow | LoadedScenario,
        spec: Any,
        make: Callable[[], Any],
    ) -> list[pytest.Item]:
        """One item of ``kind`` per parameter set of ``spec`` (a workflow or scenario),
        each made ``--count`` times under pytest-repeat."""
        items: list[pytest.Item] = []
        for param_id, values in _unique_ids(spec.parameter_sets()):
            name = f"{spec.name}[{param_id}]" if param_id else spec.name
            try:
                marks = item_marks(loaded)
                count = _repeats(self.config, loaded, marks)
                if isinstance(loaded, LoadedWorkflow) and (unset := unset_error(loaded)):
                    raise unset
            except WorkflowSpecError as exc:
                items.append(
                    WorkflowErrorItem.from_parent(self, name=name, error=exc, line=loaded.line)
                )
                continue
            for step, step_id in repeat_ids(count):
                # The item's id is its parent's id and its name, with the parameter id in
                # it, as for any non-Python item: given no ``originalname`` (which pytest
                # 9.2 reads together with a Python parametrization this item does not
                # have), no release of pytest drops the ``[id]``. pytest-repeat's id comes
                # last, as its parametrization does for Python tests: ``name[QUIC-1-3]``.
                ids = "-".join(i for i in (param_id, step_id) if i)
                item = kind.from_parent(
                    self,
                    name=f"{spec.name}[{ids}]" if ids else spec.name,
                    callobj=make(),
                    loaded=loaded,
                    params=values,
                )
                for mark in marks:
                    item.add_marker(mark)
                if step_id:
                    item.stash[repeat_step_key] = step
                items.append(item)
        return items


def _inside(loaded: LoadedScenario, root: Path) -> None:
    """A member's workflow file lies inside the suite (pytest's rootdir): a scenario is
    data, and ``../../elsewhere`` would run and record what the suite does not hold."""
    for member in loaded.members:
        if member.loaded is None:
            continue
        path = member.loaded.path.resolve()
        if not path.is_relative_to(root.resolve()):
            raise WorkflowSpecError(
                loaded.path,
                member.line,
                f"member {member.name!r}: its workflow {member.member.workflow!r} is "
                f"outside the suite ({root}): keep the workflow files a scenario runs "
                "inside the project",
            )


def _line(item: pytest.Item) -> int:
    loaded = getattr(item, "loaded", None)
    return int(getattr(loaded, "line", 0) or getattr(item, "line", 1))


def _twin(path: Path) -> Path | None:
    """``x.netgent.yml`` beside ``x.netgent.yaml`` (or the other way round): both would
    cache into ``__netgent__/x/``."""
    for a, b in ((".netgent.yaml", ".netgent.yml"), (".netgent.yml", ".netgent.yaml")):
        if path.name.endswith(a):
            other = path.with_name(path.name[: -len(a)] + b)
            if other.is_file():
                return other
    return None


def _unique_ids(sets: list[tuple[str, dict[str, Scalar]]]) -> list[tuple[str, dict[str, Scalar]]]:
    """Parameter ids made unique as pytest makes them (``QUIC0``, ``QUIC1``): two items of
    one id would never both run under xdist."""
    ids = [i for i, _ in sets]
    repeated = {i for i in ids if ids.count(i) > 1}
    if not repeated:
        return sets
    seen: dict[str, int] = {}
    out = []
    for param_id, values in sets:
        if param_id in repeated:
            n = seen.get(param_id, 0)
            seen[param_id] = n + 1
            param_id = f"{param_id}{n}"
        out.append((param_id, values))
    return out


def _repeats(
    config: pytest.Config, doc: LoadedWorkflow | LoadedScenario, marks: list[pytest.MarkDecorator]
) -> int:
    """How many items pytest-repeat makes of each parameter set (1 without it)."""
    try:
        return repeat_count(config, marks)
    except ValueError as exc:
        raise WorkflowSpecError(doc.path, doc.line_of("marks"), f"marks: {exc}") from None


def _make_test() -> Any:
    def netgent_workflow(request: pytest.FixtureRequest, netgent_browser: NetgentBrowser) -> None:
        """Replay the workflow of this item (see pytest_netgent.plugin.collect)."""
        __tracebackhide__ = True
        item = request.node
        assert isinstance(item, WorkflowItem)
        synthesiser = None
        if netgent_browser.settings.record:  # plain replay never builds a model
            synthesiser = request.getfixturevalue("netgent_synthesiser")
        with _group_lock(request, item.loaded.workflow.group):
            item.run_workflow(netgent_browser, synthesiser)

    return netgent_workflow


@contextlib.contextmanager
def _group_lock(request: pytest.FixtureRequest, group: str | None) -> Iterator[None]:
    """Items of one ``group`` never run at the same time. xdist's loadgroup keeps a group
    on one worker where it can (its items' ids carry ``@group``), but other schedulers
    spread them, and with pytest 9.2 loadgroup no longer groups at all: so the workers of
    one run also take a lock per group, in the run's shared temporary folder."""
    if not group or not hasattr(request.config, "workerinput"):
        yield  # one process runs one item at a time
        return
    from filelock import FileLock

    shared = request.getfixturevalue("tmp_path_factory").getbasetemp().parent
    folder = shared / "netgent-groups"
    folder.mkdir(exist_ok=True)
    digest = hashlib.sha256(group.encode()).hexdigest()[:16]
    with FileLock(folder / f"{digest}.lock"):
        yield


class WorkflowItem(ReportsErrors, pytest.Function):
    """One workflow (with one set of parameter values) as a pytest test item."""

    def __init__(
        self,
        *,
        loaded: LoadedWorkflow,
        params: dict[str, Scalar],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.params = params
        if loaded.workflow.metadata:
            facts = json.dumps(loaded.workflow.metadata, sort_keys=True)
            self.user_properties.append((METADATA_PROPERTY, facts))

    @property
    def heal_command(self) -> str:
        """The command that re-records this item's states."""
        return heal_command(self.nodeid)

    def capture_fields(self) -> dict[str, Any]:
        """What its captures' manifest row says of the item."""
        workflow = self.loaded.workflow
        return {
            "workflow": workflow.name,
            "category": workflow.category or "",
            "parameters": dict(self.params),
            "metadata": dict(workflow.metadata),
        }

    def artifacts_dir(self, root: Path) -> Path:
        """This item's folder under ``--netgent-artifacts`` (screenshots, captures); no
        secret value is ever part of its name. A rerun (pytest-rerunfailures) has its
        own, ``<folder>-retryN``: each attempt's files are kept."""
        from ..capture import folder_name

        return attempt_folder(self, root / folder_name(self.nodeid, self.secret_values().values()))

    def secret_values(self) -> dict[str, str]:
        """This item's secrets, name: value (kept out of its names and reports)."""
        from ..workflow.secrets import cached_env_values, resolve_secrets

        found = {n: s.reveal() for n, s in cached_env_values(self.loaded).items()}
        with contextlib.suppress(NetgentError):  # a missing secret fails the run itself
            found.update((n, s.reveal()) for n, s in resolve_secrets(self.loaded).items())
        return found

    def run_workflow(self, browser: NetgentBrowser, synthesiser: Synthesiser | None = None) -> None:
        """Replay (or record) this item's workflow on ``browser`` (a NetgentBrowser)."""
        __tracebackhide__ = True
        artifacts = self.artifacts_dir(browser.settings.artifacts)
        clear_screenshots(artifacts)  # an earlier session's: this run's failure is its own
        result = browser.run(
            self.loaded,
            params=self.params,
            heal=self.heal_command,
            artifacts=artifacts,
            check=False,
            synthesiser=synthesiser,
            on_end=self._end_reached(browser),
        )
        # the run of this item, with its parameters (wiki[alice]), not of the bare workflow
        for event in result.timeline[:1]:
            if event.event == "start":
                event.detail = self.name
        if self.loaded.workflow.expect_traffic:
            from .expectations import check_traffic

            values = {**self.loaded.workflow.vars, **self.params, "base_url": browser.base_url}
            check_traffic(self, self.loaded, values, result)
        if isinstance(result.error, ReplayError) and self.name != result.error.workflow:
            result.error.workflow = self.name
        self.stash[result_key] = result
        # a rerun's report also shows the earlier attempts' sections: each says whose it is
        n = attempt(self)
        section = "netgent timeline" if n == 1 else f"netgent timeline (retry {n - 1})"
        self.add_report_section("call", section, _timeline_text(result))
        self.ihook.pytest_netgent_run_finished(item=self, result=result)
        if result.error is not None:
            raise result.error

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.loaded.line - 1, f"workflow {self.name}"

    def _end_reached(self, browser: NetgentBrowser) -> Callable[[TimelineEvent], None] | None:
        """What tells ``pytest_netgent_end_reached`` of this item's end, if anything
        implements it (else nothing follows the run's events for it)."""
        hook = self.ihook.pytest_netgent_end_reached
        if not hook.get_hookimpls():
            return None
        return lambda event: hook(item=self, driver=browser.driver, state=event.state)


class WorkflowErrorItem(pytest.Item):
    """Stands for a workflow document that could not be loaded; errors at setup."""

    def __init__(self, *, error: NetgentError, line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.line = line

    def setup(self) -> None:
        # pytrace=False: the report is the error's own text, with no traceback.
        pytest.fail(self.error.report(), pytrace=False)

    def runtest(self) -> None:  # pragma: no cover - setup always fails
        raise self.error

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"workflow {self.name}"


def _timeline_text(result: RunResult) -> str:
    lines = []
    for e in result.timeline:
        what = e.action or e.state or e.detail
        url = f"  {e.url}" if e.url and e.event != "url" else ""
        if e.event == "url":
            what = e.url
        lines.append(f"{e.elapsed:8.3f}s  {e.event:<8} {what}{url}")
    return "\n".join(lines)
