"""asyncio (and anyio on its asyncio backend) on the virtual clock.

The event loop's clock is `time.monotonic`, which is virtual once
`_patch_time` has run, so timers (`asyncio.sleep`, `call_later`,
`wait_for`, anyio cancel scopes and `move_on_after`) are scheduled in
virtual time with no change. What would still wait in real time is the
loop's selector: `_run_once` calls `selector.select(timeout)` with the time
to the next timer. Each selector event loop's selector is wrapped so that a
select that finds nothing ready blocks on the virtual clock instead
(shims/PROTOCOL.md, "Waiting"): the runner moves the clock to the next
timer or releases the next scripted bytes, whichever comes first.

Work handed to threads (`loop.run_in_executor`, hence `asyncio.to_thread`
and `getaddrinfo`; `shutdown_default_executor`, the end of `asyncio.run`;
`anyio.to_thread.run_sync`) is real work: while any is
outstanding the loop waits for it in real time and the virtual clock does
not move.

Patched lazily, when `asyncio` (and `anyio`) are first imported, so a
program that never uses them does not pay for importing them.
"""

import sys

from ._clock import CLOCK, seconds_to_ns
from ._patch_socket import REGISTRY


class VirtualSelector:
    """Wraps an event loop's selector; everything but `select` delegates."""

    def __init__(self, inner):
        self._fm_inner = inner

    def __getattr__(self, name):
        return getattr(self._fm_inner, name)

    def _wake_ports(self):
        try:
            fds = set(self._fm_inner.get_map().keys())
        except Exception:
            return []
        return [c.port for c in REGISTRY.all if not c.closed and c.fd in fds]

    def select(self, timeout=None):
        inner = self._fm_inner
        if CLOCK.channel is None:  # the warm parent: no row, no clock
            return inner.select(timeout)
        ready = inner.select(0)
        if ready or (timeout is not None and timeout <= 0):
            return ready
        deadline = None if timeout is None else CLOCK.now_ns + seconds_to_ns(timeout)
        while True:
            if CLOCK.threads_busy > 0:
                # Real work in threads: wait for it in real time; virtual time stands still.
                CLOCK.waiting_for_threads = True
                try:
                    ready = inner.select(0.002)
                finally:
                    CLOCK.waiting_for_threads = False
                if ready:
                    return ready
                continue
            if deadline is not None and CLOCK.now_ns >= deadline:
                return inner.select(0)
            CLOCK.block(deadline, "select", self._wake_ports())
            ready = inner.select(0)
            if ready:
                return ready


def _patch_selector_events(module):
    base = module.BaseSelectorEventLoop
    if "_fm_patched" in base.__dict__:
        return
    real_init = base.__init__

    def __init__(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        if not isinstance(self._selector, VirtualSelector):
            self._selector = VirtualSelector(self._selector)

    base.__init__ = __init__
    base._fm_patched = True


def _patch_base_events(module):
    loop_cls = module.BaseEventLoop
    if "_fm_patched" in loop_cls.__dict__:
        return
    real = loop_cls.run_in_executor

    def run_in_executor(self, executor, func, *args):
        fut = real(self, executor, func, *args)
        CLOCK.threads_busy += 1

        def done(_f):
            CLOCK.threads_busy -= 1

        fut.add_done_callback(done)  # runs in the loop's thread
        return fut

    loop_cls.run_in_executor = run_in_executor

    real_shutdown = loop_cls.__dict__.get("shutdown_default_executor")
    if real_shutdown is not None:
        # asyncio.run's last step joins the executor's threads from another
        # thread and waits for it on the loop.
        async def shutdown_default_executor(self, *args, **kwargs):
            CLOCK.threads_busy += 1
            try:
                return await real_shutdown(self, *args, **kwargs)
            finally:
                CLOCK.threads_busy -= 1

        loop_cls.shutdown_default_executor = shutdown_default_executor
    loop_cls._fm_patched = True


def _patch_anyio_asyncio(module):
    backend = getattr(module, "AsyncIOBackend", None)
    if backend is None or "_fm_patched" in backend.__dict__:
        return
    real = backend.__dict__.get("run_sync_in_worker_thread")
    if real is None:
        return
    real_fn = real.__func__

    async def run_sync_in_worker_thread(cls, *args, **kwargs):
        CLOCK.threads_busy += 1
        try:
            return await real_fn(cls, *args, **kwargs)
        finally:
            CLOCK.threads_busy -= 1

    backend.run_sync_in_worker_thread = classmethod(run_sync_in_worker_thread)
    backend._fm_patched = True


HOOKS = {
    "asyncio.selector_events": _patch_selector_events,
    "asyncio.base_events": _patch_base_events,
    "anyio._backends._asyncio": _patch_anyio_asyncio,
}


class _PostImportFinder:
    """Runs a patch right after a module is first executed."""

    def find_spec(self, name, path=None, target=None):
        hook = HOOKS.get(name)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        class Loader:
            def __getattr__(self, attr):
                return getattr(loader, attr)

            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                real_exec(module)
                hook(module)

        spec.loader = Loader()
        return spec


def install():
    for name, hook in HOOKS.items():
        module = sys.modules.get(name)
        if module is not None:
            hook(module)
    sys.meta_path.insert(0, _PostImportFinder())
