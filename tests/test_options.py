"""The plugin's options and ini values are checked once, before any item runs: a bad value
is one usage error that names the option, what it expects and what it got."""

from __future__ import annotations

import pytest

from .helpers import Project, good


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--netgent-state-timeout", "nan"], "*--netgent-state-timeout expects a number of "
         "seconds greater than 0, got 'nan'*"),
        (["--netgent-state-timeout", "1e309"], "*got '1e309'*"),
        (["-o", "netgent_state_timeout=inf"], "*ini netgent_state_timeout expects a number*"),
        (["--netgent-base-url", "http://[::1"], "*--netgent-base-url expects an http:// or "
         "https:// URL with a host, got 'http://[::1' (Invalid IPv6 URL)*"),
        (["--netgent-base-url", "http://"], "*got 'http://' (no host)*"),
        (["--netgent-base-url", "http://127.0.0.1:99999"], "*got 'http://127.0.0.1:99999' (Port "
         "out of range 0-65535)*"),
        (["--netgent-artifacts", "a-file"], "*--netgent-artifacts * is a file, not a folder*"),
        (["--netgent-record", "--netgent-llm", "nosuchmodule:chat"], "*--netgent-llm "
         "'nosuchmodule:chat': Unable to infer model provider for model='nosuchmodule:chat'*"),
    ],
)  # fmt: skip
def test_options_are_checked_once_up_front(project: Project, args: list[str], message: str) -> None:
    (project.path / "a-file").write_text("")
    good(project)
    result = project.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len(result.stderr.lines) <= 3  # one usage error, no traceback
