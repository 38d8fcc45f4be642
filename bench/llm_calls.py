"""LLM cost of recording and of healing, with a counting fake model.

Records every example workflow from nothing with the LLM synthesiser alone (no builtin
tier, so every step is a model call), then heals them on a copy of the local wiki whose
login form alone changed (other ids, labels and layout): only the state that uses it
should cost calls. Prints calls and tokens for each and last
``ratio heal/record calls: X``.

    python bench/llm_calls.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from oracle import OracleChatModel  # noqa: E402

from fixtures import wiki  # noqa: E402
from fixtures.http import AppServer  # noqa: E402
from pytest_netgent.browser.session import BrowserOptions  # noqa: E402
from pytest_netgent.runner import BrowserPool, NetgentBrowser, Settings  # noqa: E402
from pytest_netgent.spec import LoadedWorkflow, load_workflows  # noqa: E402
from pytest_netgent.synthesis.llm import LLMSynthesiser  # noqa: E402

PASSWORD = "netgent-pass"


def workflows(folder: Path) -> list[LoadedWorkflow]:
    found = []
    for path in sorted(folder.rglob("*.netgent.yaml")):
        found += [d for d in load_workflows(path) if isinstance(d, LoadedWorkflow)]
    return found


def run_all(
    browser: NetgentBrowser, items: list[LoadedWorkflow], mode: str
) -> tuple[int, int, list[str]]:
    """Record every workflow (its first parameter set); calls, tokens, states changed."""
    calls = tokens = 0
    changed: list[str] = []
    for loaded in items:
        model = OracleChatModel()
        synth = LLMSynthesiser(model)
        params = loaded.workflow.parameter_sets()[0][1]
        result = browser.run(loaded, params=params, record=mode, synthesiser=synth, check=False)
        browser._pool.reset(browser.origins)
        if not result.passed:
            raise SystemExit(f"{loaded.workflow.name}: {result.error}")
        calls += model.calls
        tokens += model.input_tokens + model.output_tokens
        if result.record is not None:
            changed += [f"{loaded.workflow.name}/{n}" for n in result.record.synthesised]
            changed += [f"{loaded.workflow.name}/{n} (healed)" for n in result.record.healed]
    return calls, tokens, changed


def main() -> None:
    os.environ.setdefault("NETWIKI_PASSWORD", PASSWORD)
    work = Path(tempfile.mkdtemp(prefix="netgent-bench-"))
    try:
        shutil.copytree(ROOT / "example_suites", work / "example_suites")
        for cache in (work / "example_suites").rglob("__netgent__"):
            shutil.rmtree(cache)
        items = workflows(work / "example_suites")
        # the same wiki, but its login form comes from the changed UI
        wiki.VARIANTS["login-changed"] = {
            **wiki.VARIANTS["original"],
            "login_form": wiki.VARIANTS["changed"]["login_form"],
        }
        pool = BrowserPool(BrowserOptions())
        try:
            server = AppServer([wiki.make_app("original")]).start()
            browser = NetgentBrowser(pool, Settings(state_timeout=5, artifacts=work), server.url)
            record_calls, record_tokens, recorded = run_all(browser, items, "all")
            server.stop()
            server = AppServer([wiki.make_app("login-changed")]).start()
            browser = NetgentBrowser(pool, Settings(state_timeout=5, artifacts=work), server.url)
            heal_calls, heal_tokens, healed = run_all(browser, items, "missing")
            server.stop()
        finally:
            pool.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"workflows: {len(items)} (example_suites, first parameter set each)")
    print(
        f"record from nothing: {len(recorded)} states, {record_calls} LLM calls, "
        f"{record_tokens} tokens"
    )
    print(
        f"heal after a login-form change: {', '.join(healed) or 'nothing'}; "
        f"{heal_calls} LLM calls, {heal_tokens} tokens"
    )
    print(f"ratio heal/record calls: {heal_calls / record_calls:.3f}")


if __name__ == "__main__":
    main()
