"""Packets: tcpdump on the worker's own interfaces, one Ethernet pcap per item, and
what is cleared between two captures so none reaches into the next."""

from __future__ import annotations

import contextlib
import functools
import heapq
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..system import atomic
from ..system.leftovers import owned_env
from . import CaptureError


class Tcpdump:
    """tcpdump on each of ``interfaces`` (one process each), merged into one Ethernet
    pcap in time order when stopped."""

    def __init__(
        self,
        path: Path,
        exclude_ports: Iterable[int] = (),
        interfaces: Iterable[str] = ("lo",),
        buffer_kib: int = 8192,
    ):
        self.path = path
        self.buffer_kib = buffer_kib
        """The kernel's buffer for each tcpdump: room for bursts (video segments)."""
        self.exclude_ports = sorted({p for p in exclude_ports if p})
        self.interfaces: list[str] = []
        self._pending = list(interfaces)
        self._procs: list[tuple[str, Path, subprocess.Popen[bytes]]] = []
        self.dropped = 0
        """Packets the kernel dropped before tcpdump could read them (known once stopped)."""

    def start(self, timeout: float = 10.0) -> None:
        """Start capturing; returns once every tcpdump listens."""
        self.add(self._pending, timeout)

    def add(self, interfaces: Iterable[str], timeout: float = 10.0) -> None:
        """Capture on ``interfaces`` too, from now on (e.g. an uplink that came up)."""
        started = []
        for interface in interfaces:
            if interface in self.interfaces:
                continue
            self.interfaces.append(interface)
            part = self.path.with_name(f"{self.path.name}.{interface}.part")
            proc = subprocess.Popen(
                self._command(interface, part),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=owned_env(),  # ended by a watcher if this worker dies
            )
            assert proc.stderr is not None
            os.set_blocking(proc.stderr.fileno(), False)
            self._procs.append((interface, part, proc))
            started.append((interface, proc))
        deadline = time.monotonic() + timeout
        for interface, proc in started:
            self._await_listening(interface, proc, deadline, timeout)

    def _command(self, interface: str, part: Path) -> list[str]:
        """The tcpdump writing ``interface``'s packets to ``part``."""
        filter_ = []
        if self.exclude_ports:
            # WebDriver and DevTools commands between the test and its browser
            ports = " or ".join(f"tcp port {p}" for p in self.exclude_ports)
            filter_ = ["not", "(", *ports.split(), ")"]
        return [
            shutil.which("tcpdump") or "tcpdump",
            "-i",
            interface,
            "-w",
            str(part),
            "-U",  # each packet written as it comes: the file is whole when stopped
            "--immediate-mode",
            "-s",
            "0",
            "-B",
            str(self.buffer_kib),
            "-n",
            "-Z",
            "root",  # keep writing as root: the artifacts folder is ours
            *filter_,
        ]

    def _await_listening(
        self, interface: str, proc: subprocess.Popen[bytes], deadline: float, timeout: float
    ) -> None:
        """Return once tcpdump says it listens; stop every capture and raise if it does not."""
        assert proc.stderr is not None
        seen = b""
        while b"listening on" not in seen:
            if proc.poll() is not None:
                why = (seen + (proc.stderr.read() or b"")).decode(errors="replace")
                lines = why.strip().splitlines()
                self.stop()
                raise CaptureError(
                    f"--netgent-capture=pcap: tcpdump did not start on {interface}: "
                    f"{lines[-1] if lines else f'exit status {proc.returncode}'}; run "
                    "as root (or with CAP_NET_RAW), or leave pcap out of --netgent-capture"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise CaptureError(
                    f"--netgent-capture=pcap: tcpdump did not start listening on "
                    f"{interface} within {timeout:g}s (is the machine overloaded?)"
                )
            chunk = proc.stderr.read(4096)
            if chunk:
                seen += chunk
            else:
                time.sleep(0.005)

    def so_far(self) -> list[Path]:
        """The files holding every packet seen up to now, while the capture goes on (one
        per interface; a packet being written may be cut short at their end)."""
        procs = [proc for _, _, proc in self._procs]
        _await_idle(procs)
        return [part for _, part, _ in self._procs]

    def stop(self) -> None:
        """Stop capturing; the pcap holds every packet seen up to now."""
        procs, self._procs = self._procs, []
        if not procs:
            return
        _await_idle([proc for _, _, proc in procs])  # packets sent so far reach the files
        for _, _, proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        for _, _, proc in procs:
            text = _last_words(proc, deadline)
            if m := re.search(r"(\d+) packets? dropped by kernel", text):
                self.dropped += int(m[1])
        parts = [part for _, part, _ in procs]
        if len(parts) == 1:
            with contextlib.suppress(FileNotFoundError):
                os.replace(parts[0], self.path)
            return
        merge_pcaps(parts, self.path)
        for part in parts:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()


def _last_words(proc: subprocess.Popen[bytes], deadline: float) -> str:
    """What a stopping tcpdump says up to its counts, once every packet is in its file
    (killed at ``deadline``). Its exit is awaited in the background: closing its packet
    socket takes the kernel tens of milliseconds, for nothing the pcap still needs."""
    assert proc.stderr is not None
    said = b""
    while b"dropped by kernel" not in said and proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            break
        with contextlib.suppress(OSError, TypeError):  # nothing to read yet
            said += proc.stderr.read() or b""
        time.sleep(0.001)
    with contextlib.suppress(OSError, TypeError):  # nothing more to read
        said += proc.stderr.read() or b""
    proc.stderr.close()
    if proc.returncode is None:
        threading.Thread(target=proc.wait, name="netgent-tcpdump-exit", daemon=True).start()
    return said.decode(errors="replace")


def _await_idle(procs: list[subprocess.Popen[bytes]], timeout: float = 0.5) -> None:
    """Return once each tcpdump sleeps waiting for packets (at most ``timeout`` seconds):
    a packet sent wakes it before its sender goes on, and ``-U`` writes each one as it
    comes, so one that sleeps has written everything sent before this call."""
    import psutil

    done = (psutil.STATUS_SLEEPING, psutil.STATUS_ZOMBIE)  # (a zombie: it ended on its own)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            process = psutil.Process(proc.pid)
            while process.status() not in done and time.monotonic() < deadline:
                time.sleep(0.001)
        except psutil.Error:  # it ended: nothing more reaches its file
            continue


def pcap_records(path: Path) -> Iterator[tuple[float, bytes, bytes]]:
    """``(time, record header, packet)`` of each packet of a classic pcap file."""
    with path.open("rb") as f:
        header = f.read(24)
        if len(header) < 24:
            return
        magic = header[:4]
        order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        while len(record := f.read(16)) == 16:
            seconds, fraction, captured, _ = struct.unpack(order + "IIII", record)
            data = f.read(captured)
            if len(data) < captured:
                return  # cut short
            yield seconds + fraction * scale, record, data


def merge_pcaps(parts: list[Path], target: Path) -> None:
    """Merge pcap files of one link type (tcpdump's, same byte order) in time order."""
    existing = [p for p in parts if p.is_file() and p.stat().st_size >= 24]
    if not existing:
        with atomic.replacing(target, "wb", durable=True):
            pass
        return
    with existing[0].open("rb") as first:
        header = first.read(24)
    streams = [pcap_records(p) for p in existing]
    with atomic.replacing(target, "wb", durable=True) as out:
        out.write(header)
        for _, record, data in heapq.merge(*streams, key=lambda r: r[0]):
            out.write(record)
            out.write(data)


CLEAR_NETWORK_STATE = """
const b = window.chrome && window.chrome.benchmarking;
if (!b) return false;
b.clearCache(); b.clearHostResolverCache(); b.clearPredictorCache(); b.closeConnections();
return true;
"""
"""Empties the HTTP cache, host and predictor caches and closes every connection (Chromium
with ``--enable-net-benchmarking``), so that the next item starts cold."""


Key = tuple[str, str, int, str, int]
"""``(proto, src, sport, dst, dport)`` of a TCP or UDP packet."""


IPV4_MAPPED = bytes(10) + b"\xff\xff"
"""The first 12 bytes of an IPv4-mapped IPv6 address."""


@functools.lru_cache(maxsize=4096)
def _address(packed: bytes) -> str:
    """An IPv4 or IPv6 address as text, as :mod:`ipaddress` writes it (a pcap names the
    same few addresses over and over: each is read once)."""
    if len(packed) == 4:
        return socket.inet_ntop(socket.AF_INET, packed)
    if packed[:12] == IPV4_MAPPED:  # ::ffff:102:304, where inet_ntop writes ::ffff:1.2.3.4
        import ipaddress

        return str(ipaddress.IPv6Address(packed))
    return socket.inet_ntop(socket.AF_INET6, packed)


def ip_five_tuple(data: bytes) -> Key | None:
    """``(proto, src, sport, dst, dport)`` of an IPv4 or IPv6 packet carrying TCP or UDP,
    else ``None``."""
    if not data:
        return None
    version = data[0] >> 4
    if version == 4 and len(data) >= 20:
        header = (data[0] & 15) * 4
        number = data[9]
        src, dst = _address(data[12:16]), _address(data[16:20])
    elif version == 6 and len(data) >= 40:
        header, number = 40, data[6]
        src, dst = _address(data[8:24]), _address(data[24:40])
    else:
        return None
    proto = {6: "tcp", 17: "udp"}.get(number)
    if proto is None or len(data) < header + 4:
        return None
    sport, dport = struct.unpack("!HH", data[header : header + 4])
    return proto, src, sport, dst, dport


def five_tuple(frame: bytes) -> tuple[Key, int] | None:
    """``((proto, src, sport, dst, dport), length)`` of an Ethernet frame carrying TCP or
    UDP over IPv4 or IPv6, else ``None``."""
    if len(frame) < 14 or frame[12:14] not in (b"\x08\x00", b"\x86\xdd"):
        return None
    key = ip_five_tuple(frame[14:])
    return None if key is None else (key, len(frame))
