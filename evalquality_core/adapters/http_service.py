"""HTTP services as systems under test: start a suite's server per call, probe it, stop it.

A suite whose system is an HTTP service declares, in its ``targets.toml``, how to start it::

    [service]
    command = ["{python}", "../system/notes_api.py", "--port", "{port}"]
    cwd = "work"                 # relative to the staged workspace root
    port_placeholder = "port"    # the placeholder the chosen port fills, here and in [[target]] api entries
    ready_timeout_ms = 10000     # how long it may take to accept a TCP connection on that port

``ServiceAdapter.probe(request, workdir=<staged workspace>)`` answers an api request by starting a
**fresh server** from the staged workspace (clean or mutated system, the leg's fixtures) on an
ephemeral loopback port, waiting until the port accepts a connection, sending the request through
the HTTP adapter under the registry's api entries (``{port}`` filled), and stopping the server when
the call ends, however it ends (answer, fault, abort, timeout). State that must outlive one call
lives in the workspace's files (a run of several calls in one workspace sees earlier writes), never
in a server process. A cli request goes to the command-line adapter under the same registry.

**The server is a leg process** (``process_group.LegProcess``), exactly as a command leg's target:
it runs under a per-leg watchdog that is a child subreaper and holds a lifeline to this process, so

* when the call ends (answer, fault, abort, the readiness or exchange deadline) the whole tree is
  killed, grandchildren that forked, double-forked or called ``setsid()`` included;
* when this process dies, even by SIGKILL, the watchdog reads end-of-file on the lifeline and kills
  the tree within milliseconds (no server outlives a run); the next run reclaims the dead run's
  workspace (tasks/workspace.py) like any leg's;
* the server is among ``live_process_groups()``, so a flow's interrupt handler
  (``kill_all_live_groups``) and process exit kill it too.

Its environment is ``PATH`` (absolute entries only) and nothing else; stdin is ``/dev/null``; its
stdout and stderr are drained for its whole life by one thread (a chatty or flooding server never
blocks on a full pipe), which keeps only the last 400 bytes of stderr for the fault message.

Readiness is a TCP connect to 127.0.0.1:<port> **and** the kernel's word that the socket listening
there is held by the leg's own process tree. A server that exits first, or is not ready in time, is
``port-failure`` naming why in one line (with the tail of its stderr), and nothing of it is left
running.

Why the second half: the port is chosen by binding port 0 and releasing it, so another process can
take it before the server binds it. Then the connect reaches that other process, and its answers
would be scored as the system's. On a busy CI host this is the likely cause of one live trial's GET
reading "connection reset by peer" (another worker's server, killed as it was asked). So once the
connect succeeds, every socket listening where a connection to 127.0.0.1 can land (127.0.0.1,
0.0.0.0, ``::``, ``::ffff:127.0.0.1``; asked of sock_diag, else read from ``/proc/net/tcp{,6}``)
must be held by the leg's tree: the leader, else any descendant of its leg watchdog (a subreaper,
so a setsid grandchild counts). A listener held by anything else means the port was taken: that
attempt is killed and the service starts again on a fresh port, ``START_ATTEMPTS`` ports in all,
then ``port-failure`` naming them. A service that hands its port to a process outside its tree (a
container runtime's proxy) is refused the same way: what answers must be what the leg runs and
kills. Where the kernel can say neither way (not Linux), the connect alone says ready.
"""

from __future__ import annotations

import os
import select
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter, absolute_path_entries
from evalquality_core.adapters.http import HttpAdapter, TimedApiObservation
from evalquality_core.adapters.process_group import LegProcess
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeRequest,
    McpProbeRequest,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.port import AbortSignal
from evalquality_core.probe.targets import TargetRegistry
from evalquality_core.probe.templates import TemplateError, fill_template

__all__ = ["ServiceAdapter", "ServiceDeclaration", "free_loopback_port", "running_service"]

_POLL_S = 0.01
_STDERR_TAIL = 400
_CHUNK = 65536
#: How often the output thread looks at its stop flag while the pipes stay quiet.
_DRAIN_POLL_S = 0.1
#: How long a dead tree's pipes may take to report end-of-file before the output thread is stopped.
_EXIT_DRAIN_S = 2.0
_TYPED = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)
#: How many ports a service start may try when the chosen one turns out taken (module docstring).
START_ATTEMPTS = 3
#: Whether readiness asks the kernel who listens on the port (tests turn it off for the control).
VERIFY_LISTENER = True
#: Where a connection to 127.0.0.1 may land: 127.0.0.1 and 0.0.0.0; ``::`` and ``::ffff:127.0.0.1``.
_LANDING_V4 = frozenset({socket.inet_pton(socket.AF_INET, "127.0.0.1"), bytes(4)})
_LANDING_V6 = frozenset({bytes(16), socket.inet_pton(socket.AF_INET6, "::ffff:127.0.0.1")})
#: The same, as ``/proc/net/tcp{,6}`` write addresses (hex words in host byte order).
_LANDING_PROC = {
    "/proc/net/tcp": frozenset({"0100007F", "00000000"}),
    "/proc/net/tcp6": frozenset({"00000000000000000000000000000000", "0000000000000000FFFF00000100007F"}),
}
_TCP_LISTEN = 10
# sock_diag (linux/sock_diag.h, linux/inet_diag.h): a dump of one family's listening TCP sockets.
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST_DUMP = 0x1 | 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NLMSG_HEADER = struct.Struct("=IHHII")
_DIAG_REQUEST = struct.Struct("=BBBBI")  # family, protocol, extensions, pad, state mask; then the 48-byte socket id
_DIAG_INODE_AT = 68  # inet_diag_msg: 4 bytes, the socket id (48), expires, rqueue, wqueue, uid, then the inode


@dataclass(frozen=True)
class ServiceDeclaration:
    """How a suite's HTTP service is started (module docstring); templates unfilled."""

    command: tuple[str, ...]
    cwd: str
    port_placeholder: str
    ready_timeout_ms: int

    @classmethod
    def from_registry(cls, registry: TargetRegistry) -> ServiceDeclaration | None:
        """The registry's ``[service]`` table, or ``None`` when it declares none."""
        if registry.service is None:
            return None
        table = registry.service
        return cls(tuple(table["command"]), table["cwd"], table["port_placeholder"], table["ready_timeout_ms"])

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with every ``{name}`` placeholder filled (probe/templates.py: nothing is evaluated,
        so ``{x.__class__}`` or ``{python[9]}`` is never read; the registry refuses them when it is
        parsed); a placeholder without a value, or a malformed template, is a one-line fault."""
        filled = []
        for part in self.command:
            try:
                filled.append(fill_template(part, values))
            except KeyError as exc:
                raise RuntimeFault("schema-parse-failure", "targets.toml", f"service command {part!r}: no value for {{{exc.args[0]}}}") from None
            except TemplateError as exc:
                raise RuntimeFault("schema-parse-failure", "targets.toml", f"service command {part!r}: {exc}") from None
        return filled


def free_loopback_port() -> int:
    """An ephemeral port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _OutputDrain:
    """Reads a service's stdout and stderr until both close (or ``stop``), keeping the stderr tail.

    It reads its own duplicates of the pipe descriptors, so ``LegProcess.close()`` closing the
    originals can never pull a descriptor from under a blocked read."""

    def __init__(self, leg: LegProcess) -> None:
        self._fds = {os.dup(leg.stdout.fileno()): "stdout", os.dup(leg.stderr.fileno()): "stderr"}
        self._tail = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eval-quality-service-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.DefaultSelector()
        try:
            for fd, name in self._fds.items():
                selector.register(fd, selectors.EVENT_READ, name)
            while selector.get_map() and not self._stop.is_set():
                for key, _mask in selector.select(_DRAIN_POLL_S):
                    try:
                        chunk = os.read(key.fd, _CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        selector.unregister(key.fd)
                    elif key.data == "stderr":
                        self._tail += chunk
                        del self._tail[:-_STDERR_TAIL]
        finally:
            selector.close()
            for fd in self._fds:
                with suppress(OSError):
                    os.close(fd)

    def finish(self, timeout: float) -> None:
        """Wait until both pipes closed (the tree is dead), at most ``timeout`` s; then stop reading."""
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join()

    def stderr_tail(self) -> str:
        """The last bytes the service wrote to stderr, on one line."""
        text = " ".join(bytes(self._tail).decode("utf-8", errors="replace").split())
        return text or "nothing on stderr"


class _PortTaken(Exception):
    """The chosen port's listener is not the service's own: start again on a fresh port."""


def _listening_inodes(port: int) -> frozenset[int] | None:
    """Socket inodes listening where a connection to 127.0.0.1:``port`` can land; None when the
    kernel cannot say. Asked of sock_diag (tens of microseconds: it walks only the listening sockets);
    ``/proc/net/tcp`` is the fallback (milliseconds: reading it walks the whole connection table)."""
    try:
        return _listening_inodes_diag(port)
    except (OSError, AttributeError):  # no sock_diag here (AttributeError: no AF_NETLINK at all)
        return _listening_inodes_proc(port)


def _listening_inodes_diag(port: int) -> frozenset[int]:
    """``_listening_inodes`` from a sock_diag netlink dump (``OSError`` where there is none)."""
    found: set[int] = set()
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as netlink:
        netlink.settimeout(2.0)
        for family, landing, width in ((socket.AF_INET, _LANDING_V4, 4), (socket.AF_INET6, _LANDING_V6, 16)):
            request = _DIAG_REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN)
            request += struct.pack("!HH", port, 0) + bytes(44)  # the kernel skips listeners on other ports
            netlink.send(_NLMSG_HEADER.pack(_NLMSG_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY,
                                            _NLM_F_REQUEST_DUMP, 1, 0) + request)
            done = False
            while not done:
                data = netlink.recv(1 << 16)
                if not data:
                    raise OSError("sock_diag closed the dump")
                offset = 0
                while offset + _NLMSG_HEADER.size <= len(data):
                    length, kind = _NLMSG_HEADER.unpack_from(data, offset)[:2]
                    body = offset + _NLMSG_HEADER.size
                    if kind == _NLMSG_DONE:
                        done = True
                        break
                    if kind == _NLMSG_ERROR:
                        raise OSError(-struct.unpack_from("=i", data, body)[0], "sock_diag refused the dump")
                    source_port = struct.unpack_from("!H", data, body + 4)[0]
                    address = data[body + 8:body + 8 + width]
                    if data[body + 1] == _TCP_LISTEN and source_port == port and address in landing:
                        found.add(struct.unpack_from("=I", data, body + _DIAG_INODE_AT)[0])
                    offset += max((length + 3) & ~3, _NLMSG_HEADER.size)
    return frozenset(found)


def _listening_inodes_proc(port: int) -> frozenset[int] | None:
    """``_listening_inodes`` from ``/proc/net/tcp{,6}``; None when neither can be read."""
    found: set[int] = set()
    readable = False
    for table, landing in _LANDING_PROC.items():
        try:
            with open(table, encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != f"{_TCP_LISTEN:02X}":
                continue
            address, _, hex_port = fields[1].partition(":")
            if address in landing and int(hex_port, 16) == port:
                found.add(int(fields[9]))
    return frozenset(found) if readable else None


def _socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets ``pid`` holds open (empty when it is gone or unreadable)."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            link = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def _parent_of(pid: int) -> int | None:
    """``pid``'s parent, read from ``/proc`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (from the parent links in ``/proc``)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            parent = _parent_of(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _held_by_leg(listening: frozenset[int], leader: int, watchdog: int | None) -> bool:
    """Whether every socket in ``listening`` is held by the leg's tree: its leader (the common case,
    one directory to read), else any process below its leg watchdog."""
    if listening <= _socket_inodes(leader):
        return True
    held: set[int] = set()
    for pid in _descendants(watchdog) if watchdog is not None else ():
        held |= _socket_inodes(pid)
        if listening <= held:
            return True
    return False


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _ready(port: int, leg: LegProcess, watchdog: int | None) -> bool:
    """Whether the service is ready: the port accepts a connection and its listener is the leg's own
    (``_PortTaken`` when it is something else's)."""
    if not _accepts(port):
        return False
    if not VERIFY_LISTENER:
        return True
    listening = _listening_inodes(port)
    if listening is None:  # the kernel cannot say (not Linux): the connect is all there is
        return True
    if not listening:  # it closed between the connect and the look: look again next round
        return False
    if _held_by_leg(listening, leg.pid, watchdog):
        return True
    raise _PortTaken


def _await_ready(leg: LegProcess, port: int, declaration: ServiceDeclaration, abort: AbortSignal | None,
                 output: _OutputDrain) -> None:
    """Return once the service accepts connections on ``port`` on a socket of its own; raise
    ``port-failure`` (exited, not ready in time), ``aborted``, or ``_PortTaken``. Waiting is on the
    lifeline, so an exit is seen at once."""
    deadline = time.monotonic() + declaration.ready_timeout_ms / 1000.0
    watchdog = _parent_of(leg.pid)  # the leg watchdog, a subreaper: every process of the leg is below it
    lifeline = select.poll()  # poll, not select: a busy host's descriptors may be numbered past 1024
    lifeline.register(leg.lifeline, select.POLLIN)
    while not _ready(port, leg, watchdog):
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted while the service was starting")
        exit_code = leg.read_exit()
        if exit_code is not None:
            output.finish(_EXIT_DRAIN_S)  # the tree is dead: its stderr is complete once the pipes close
            raise RuntimeFault(
                "port-failure", "ProbeObservation",
                f"the service exited ({exit_code}) before accepting connections on port {port}: {output.stderr_tail()}",
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeFault(
                "port-failure", "ProbeObservation",
                f"the service did not accept connections on port {port} within {declaration.ready_timeout_ms} ms"
                " and was killed",
            )
        lifeline.poll(min(_POLL_S, remaining) * 1000)
    if leg.leader_exited():
        # A daemon: the process the command started is gone and something it left serves the port. The
        # leg ended with the leader (a service stays in the foreground); its watchdog may simply not
        # have said so yet, so this is asked of the kernel, not only of the lifeline.
        raise RuntimeFault(
            "port-failure", "ProbeObservation",
            f"the service's own process exited and left something else accepting connections on port {port}"
            " (a service stays in the foreground); what it left was killed",
        )


@contextmanager
def running_service(
    declaration: ServiceDeclaration,
    workspace: str | os.PathLike[str],
    substitutions: Mapping[str, str],
    abort: AbortSignal | None = None,
) -> Iterator[int]:
    """Start the service in ``workspace`` on a fresh loopback port as a leg process (module
    docstring), yield the port once it accepts connections, and kill its whole tree on exit from
    the block, however it is left. A port found taken by another process is given up for a fresh one
    (module docstring)."""
    cwd = os.path.join(os.fspath(workspace), declaration.cwd)
    env = {"PATH": absolute_path_entries(os.environ.get("PATH", ""))}
    taken: list[int] = []
    while len(taken) < START_ATTEMPTS:
        port = free_loopback_port()
        argv = declaration.argv({**substitutions, declaration.port_placeholder: str(port)})
        try:
            leg = LegProcess.launch(argv, cwd, env, stdin=False)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise RuntimeFault("port-failure", "ProbeObservation", f'could not start service "{argv[0]}" in "{cwd}": {reason}') from None
        try:
            output = _OutputDrain(leg)
        except BaseException:
            leg.close()
            raise
        try:
            try:
                _await_ready(leg, port, declaration, abort, output)
            except _PortTaken:
                taken.append(port)
                continue
            yield port
            return
        finally:
            leg.kill()
            output.finish(_EXIT_DRAIN_S)
            leg.close()
    raise RuntimeFault(
        "port-failure", "ProbeObservation",
        f"on each of {len(taken)} tries the service's port was held by a process outside its tree, not the service's own"
        f" (port {', port '.join(map(str, taken))}): another process took it before the service bound it, or the"
        " service handed it to a process it does not run",
    )


class ServiceAdapter:
    """The ``ProbePort`` of a suite registry: api requests to a fresh service per call, cli requests
    to the command-line adapter. ``substitutions`` fill the registry's other placeholders
    (``{python}``)."""

    def __init__(self, registry: TargetRegistry, substitutions: Mapping[str, str], *, workdir: str | os.PathLike[str] | None = None) -> None:
        self.registry = registry
        self.substitutions = dict(substitutions)
        self.declaration = ServiceDeclaration.from_registry(registry)
        self.workdir = None if workdir is None else os.fspath(workdir)
        self._cli: CommandLineAdapter | None = None

    def _command_line(self) -> CommandLineAdapter:
        if self._cli is None:
            self._cli = CommandLineAdapter(self.registry.to_policy(self.substitutions), workdir=self.workdir)
        return self._cli

    def probe(self, request: Any, *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None) -> Any:
        """Run one request (cli or api) in ``workdir`` and return its observation."""
        return self.probe_timed(request, abort=abort, workdir=workdir).observation

    def probe_timed(self, request: Any, *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None) -> Any:
        """``probe``, with the elapsed milliseconds of the exchange (service start-up excluded)."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        parsed = request if isinstance(request, _TYPED) else read_probe_request(request)
        if not isinstance(parsed, ApiProbeRequest):
            return self._command_line().probe_timed(parsed, abort=abort, workdir=workdir)
        if self.declaration is None:
            raise RuntimeFault(
                "forbidden-target", "ProbeRequest", "the registry declares no [service] to answer api requests",
                reason="interface-not-authorized",
            )
        where = os.fspath(workdir) if workdir is not None else self.workdir
        if where is None:
            raise RuntimeFault("port-failure", "ProbeObservation", "an api request needs a staged workspace to start its service in")
        # The interface must be one the registry authorizes before anything is started.
        if parsed.interface_id not in self.registry.api_interfaces():
            raise RuntimeFault(
                "forbidden-target", "ProbeRequest", f'no authorization names interface "{parsed.interface_id}"',
                reason="interface-not-authorized",
            )
        with running_service(self.declaration, where, self.substitutions, abort) as port:
            values = {**self.substitutions, self.declaration.port_placeholder: str(port)}
            adapter = HttpAdapter(self.registry.to_api_policy(values))
            timed: TimedApiObservation = adapter.probe_timed(parsed, abort=abort)
        return timed

    def probe_calls(self, requests: list[Any], *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None) -> list[Any]:
        """A multi-call leg (docs/reference/multi-call-legs.md): api requests answered in order by ONE
        service started once in ``workdir``, so a later call sees what an earlier one stored; one
        observation per request. A cli leg's calls run one after another in the same workspace."""
        parsed = [request if isinstance(request, _TYPED) else read_probe_request(request) for request in requests]
        if not all(isinstance(one, ApiProbeRequest) for one in parsed):
            if any(isinstance(one, ApiProbeRequest) for one in parsed):
                raise RuntimeFault("port-failure", "ProbeRequest", "a leg mixes api and command calls; one server answers a leg")
            return [self.probe(one, abort=abort, workdir=workdir) for one in parsed]
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        if self.declaration is None:
            raise RuntimeFault(
                "forbidden-target", "ProbeRequest", "the registry declares no [service] to answer api requests",
                reason="interface-not-authorized",
            )
        where = os.fspath(workdir) if workdir is not None else self.workdir
        if where is None:
            raise RuntimeFault("port-failure", "ProbeObservation", "an api request needs a staged workspace to start its service in")
        for one in parsed:  # every call's interface is authorized before anything is started
            if one.interface_id not in self.registry.api_interfaces():
                raise RuntimeFault(
                    "forbidden-target", "ProbeRequest", f'no authorization names interface "{one.interface_id}"',
                    reason="interface-not-authorized",
                )
        with running_service(self.declaration, where, self.substitutions, abort) as port:
            values = {**self.substitutions, self.declaration.port_placeholder: str(port)}
            adapter = HttpAdapter(self.registry.to_api_policy(values))
            return [adapter.probe_timed(one, abort=abort).observation for one in parsed]
