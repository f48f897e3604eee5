"""What a walk through the project does, recorded at runtime (scripts/architecture_walks.py).

A walk is recorded as segments, one per thread of control: the driver's thread, and each
piece of work handed to another thread (a `ThreadPoolExecutor.submit` or a
`threading.Thread.start`, made from a recorded thread) gets a segment of its own, placed
where it was handed over. A segment is an ordered list of events:

- `("file", path)`: the first call, in this segment, into a project file (`sys.setprofile`
  sees every call; module bodies run by imports are left out);
- `("hop", Hop)`: the walk crossing a boundary, before the file it enters: a Celery task's
  function starting (named by the task's name), work handed to a thread, a
  `transaction.on_commit` callback running, a signal calling a project receiver, or a
  *callback*: a direct call from one app into another that the caller's app does not
  import (a hook registered at start-up, or a function handed over as an argument);
- `("back", Crossing)`: a call back: a call from one app into another that the caller's app
  does not import (a signal, a registered hook, a function handed over), made while a frame
  of the called app is still on the thread's stack: the work goes back into an app it came
  from. Calls down the imports are plain reads of a lower layer and do not count; a thread
  starts with a stack of its own.

Flattening the segments depth first (a thread's segment where it was started) gives one
order that does not depend on how the threads interleave, as long as each thread's own work
is the same from run to run.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


@dataclass(frozen=True)
class Hop:
    kind: str  # task, thread, after commit, signal, callback
    label: str
    source: str | None  # the project file that made it (nearest on the stack), if any
    target: str | None  # the project file it entered first, if any


@dataclass(frozen=True)
class Crossing:
    source: str
    target: str


class Segment:
    """One thread of control's events, each kept once, in the order first seen."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self._seen: set = set()

    def add(self, kind: str, value: Any) -> None:
        if (kind, value) not in self._seen:
            self._seen.add((kind, value))
            self.events.append((kind, value))


class _Pending:
    """A thread or after-commit hop whose target is known once its work ran."""

    def __init__(self, kind: str, label: str, source: str | None) -> None:
        self.kind, self.label, self.source = kind, label, source
        self.child: Segment | None = None
        self.target: str | None = None

    def hop(self) -> Hop:
        return Hop(self.kind, self.label, self.source, self.target)


def flatten(segment: Segment) -> Iterator[tuple[str, Any]]:
    """The segment's events with each thread's segment in place, hops resolved."""
    for kind, value in segment.events:
        if kind == "pending":
            yield "hop", value.hop()
            if value.child is not None:
                yield from flatten(value.child)
        else:
            yield kind, value


def describe(function: Any) -> str:
    """A short name for a callable handed over: its qualified name (a Celery task's name)."""
    if isinstance(function, partial):
        inner = describe(function.func)
        handed = [describe(arg) for arg in function.args if callable(arg)]
        return f"{inner}({', '.join(handed)})" if handed else inner
    task = getattr(function, "__self__", None)
    if hasattr(task, "name") and hasattr(task, "apply_async"):
        return f"{task.name}.{function.__name__}"
    if hasattr(function, "apply_async") and hasattr(function, "name"):
        return function.name
    name = getattr(function, "__qualname__", type(function).__name__)
    return name.replace(".<locals>", "")


class Tracer:
    """Records walks. `packages` are the project's top-level packages under `root`;
    `reach[app]` the apps an app's imports reach; `tasks` a Celery task's function's code
    to its name; `signal_names` a signal object's id to its dotted name."""

    def __init__(self, *, root: Path, packages: set[str], reach: dict[str, set[str]],
                 tasks: dict[Any, str], signal_names: dict[int, str],
                 signal_types: tuple[type, ...]) -> None:
        self.root = root
        self.packages = packages
        self.reach = reach
        self.tasks = tasks
        self.signal_names = signal_names
        self.signal_types = signal_types
        self._paths: dict[str, str] = {}
        self._local = threading.local()
        self._profiling = False
        self._outstanding = 0
        self._idle = threading.Condition()

    # --- which files are the project's ---

    def relative(self, filename: str) -> str:
        """The project path of a code object's file, or "" for any other file."""
        known = self._paths.get(filename)
        if known is None:
            known = ""
            path = Path(filename)
            if path.is_absolute() and path.suffix == ".py":
                try:
                    relative = path.resolve().relative_to(self.root)
                except ValueError:
                    relative = None
                if relative is not None and relative.parts[0] in self.packages:
                    known = relative.as_posix()
            self._paths[filename] = known
        return known

    @staticmethod
    def app(path: str) -> str:
        return path.split("/", 1)[0]

    def _nearest(self, frame: Any) -> str | None:
        while frame is not None:
            path = self.relative(frame.f_code.co_filename)
            if path:
                return path
            frame = frame.f_back
        return None

    # --- recording ---

    def begin(self, *, profile: bool) -> Segment:
        """Record the calling thread into a new root segment (`profile`: every call too)."""
        segment = Segment()
        self._local.segment = segment
        self._profiling = profile
        sys.setprofile(self._profile if profile else None)
        return segment

    def end(self) -> None:
        sys.setprofile(None)
        self._profiling = False
        self._local.segment = None

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Until every piece of work handed to a thread while recording has ended."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._outstanding == 0, timeout=timeout):
                raise TimeoutError(f"{self._outstanding} pieces of work still running")

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        segment = getattr(self._local, "segment", None)
        if segment is None:
            return
        code = frame.f_code
        path = self.relative(code.co_filename)
        if not path or code.co_name == "<module>":
            return
        for pending in self._local.__dict__.get("waiting", ()):
            if pending.target is None:
                pending.target = path
        # A generator resumed by whoever iterates it was called where it was made.
        if not code.co_flags & _RESUMABLE:
            self._crossing(segment, frame, code, path)
        segment.add("file", path)

    def _crossing(self, segment: Segment, frame: Any, code: Any, path: str) -> None:
        caller = frame.f_back
        source = self._nearest(caller)
        app = self.app(path)
        unexplained = source is not None and self.app(source) != app \
            and app not in self.reach.get(self.app(source), set())
        task = self.tasks.get(code)
        owner = caller.f_locals.get("self") if caller is not None \
            and caller.f_code.co_name in ("send", "send_robust") else None
        if task is not None:
            segment.add("hop", Hop("task", task, source, path))
        elif isinstance(owner, self.signal_types):
            label = self.signal_names.get(id(owner), type(owner).__name__)
            segment.add("hop", Hop("signal", label, source, path))
        elif unexplained and self.relative(caller.f_code.co_filename):
            segment.add("hop", Hop("callback", describe_code(code), source, path))
        if unexplained and self._on_stack(caller, app):
            segment.add("back", Crossing(source, path))

    def _on_stack(self, frame: Any, app: str) -> bool:
        """Whether a frame of `app` is on this thread's stack, from `frame` down."""
        while frame is not None:
            path = self.relative(frame.f_code.co_filename)
            if path and self.app(path) == app:
                return True
            frame = frame.f_back
        return False

    def _hand_over(self, kind: str, label: str, work: Callable[[], Any],
                   *, thread: bool) -> Callable[[], Any] | None:
        """`work` wrapped to record itself as a hop from here (None when the calling thread
        is not recorded): work for a thread gets a segment of its own, placed here; an
        after-commit callback records into the segment that runs it, when it runs."""
        segment = getattr(self._local, "segment", None)
        if segment is None:
            return None
        pending = _Pending(kind, label, self._nearest(sys._getframe(2)))
        if thread:
            pending.child = Segment()
            segment.events.append(("pending", pending))
            with self._idle:
                self._outstanding += 1
        profile = self._profiling

        def run() -> Any:
            previous = getattr(self._local, "segment", None)
            into = pending.child if thread else previous
            if into is None:
                return work()
            if not thread:
                into.events.append(("pending", pending))
            waiting = self._local.__dict__.setdefault("waiting", [])
            waiting.append(pending)
            self._local.segment = into
            if thread and profile:
                sys.setprofile(self._profile)
            try:
                return work()
            finally:
                if thread:
                    sys.setprofile(None)
                waiting.remove(pending)
                self._local.segment = previous
                if thread:
                    with self._idle:
                        self._outstanding -= 1
                        self._idle.notify_all()
        return run

    # --- the patches that see hand-overs ---

    def install(self) -> None:
        """Patch ThreadPoolExecutor.submit, Thread.start and the connections' on_commit."""
        from django.db.backends.base.base import BaseDatabaseWrapper

        tracer = self
        submit, start = ThreadPoolExecutor.submit, threading.Thread.start
        on_commit = BaseDatabaseWrapper.on_commit

        def traced_submit(executor, fn, /, *args, **kwargs):
            label = f"{executor._thread_name_prefix or 'pool'}: {describe(fn)}"
            run = tracer._hand_over("thread", label, partial(fn, *args, **kwargs), thread=True)
            return submit(executor, run) if run else submit(executor, fn, *args, **kwargs)

        def traced_start(thread):
            target = getattr(thread, "_target", None)
            if getattr(target, "__module__", "") != "concurrent.futures.thread":
                name = thread.name.rstrip("0123456789").rstrip("-_") or "thread"
                run = tracer._hand_over("thread", f"{name}: {describe(thread.run)}",
                                        thread.run, thread=True)
                if run is not None:
                    thread.run = run
            return start(thread)

        def traced_on_commit(connection, func, robust=False):
            run = tracer._hand_over("after commit", describe(func), func, thread=False)
            return on_commit(connection, run or func, robust)

        ThreadPoolExecutor.submit = traced_submit
        threading.Thread.start = traced_start
        BaseDatabaseWrapper.on_commit = traced_on_commit


def describe_code(code: Any) -> str:
    return code.co_qualname.replace(".<locals>", "")


def signal_objects(types: tuple[type, ...]) -> list[Any]:
    """Every live signal object of these types."""
    import gc

    return [thing for thing in gc.get_objects() if isinstance(thing, types)]


def signal_dotted_names(signals: list[Any]) -> dict[int, str]:
    """A signal's id to `module.name` of the module-level name that defines it."""
    wanted = {id(signal) for signal in signals}
    candidates: dict[int, list[str]] = {}
    for module_name, module in sorted(sys.modules.items()):
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            if id(value) in wanted:
                candidates.setdefault(id(value), []).append(f"{module_name}.{attribute}")
    names = {}
    for key, found in candidates.items():
        defining = [name for name in found if _defines(name)]
        names[key] = (defining or sorted(found, key=len))[0]
    return names


def _defines(dotted: str) -> bool:
    module_name, _, attribute = dotted.rpartition(".")
    filename = getattr(sys.modules.get(module_name), "__file__", None)
    if not filename or not filename.endswith(".py"):
        return False
    text = Path(filename).read_text(encoding="utf-8", errors="replace")
    return any(line.startswith(f"{attribute} = ") for line in text.splitlines())
