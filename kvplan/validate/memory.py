"""Device memory: what is free, what is allocated now, and the peak during a phase.

GPU: the CUDA caching allocator's own counters (``torch.cuda.memory_allocated``,
``max_memory_allocated`` after ``reset_peak_memory_stats``, ``mem_get_info`` for free memory).

CPU: torch keeps no allocator statistics there, so a ``TorchDispatchMode`` watches every op while a
phase runs and counts the storages ops create (an output whose storage is none of the inputs'),
subtracting each when it is freed (a weak reference on the storage). Persistent tensors the run
allocates itself (weights, caches) are added by the caller from their ``nbytes``. This counts
tensor bytes, not malloc's bookkeeping or a kernel's private scratch.
"""

import contextlib
import os
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def cpu_available_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux); else physical pages free."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


class _LiveStorages(TorchDispatchMode):
    """Counts bytes of storages created inside the mode and still alive; keeps the peak."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._seen: dict[int, int] = {}

    def _freed(self, key: int) -> None:
        self.live -= self._seen.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = {id(t.untyped_storage()) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        out = func(*args, **kwargs)
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            st = t.untyped_storage()
            key = id(st)
            if key in inputs or key in self._seen:
                continue  # a view or an in-place result: no new memory
            n = st.nbytes()
            if n == 0:
                continue
            self._seen[key] = n
            self.live += n
            weakref.finalize(st, self._freed, key)
        self.peak = max(self.peak, self.live)
        return out


class MemoryProbe:
    """One interface for both devices: ``allocated()``, ``phase()`` context, ``peak`` of the last phase."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.persistent = 0  # CPU: bytes of the run's own long-lived tensors
        self._tracker: _LiveStorages | None = None
        self.peak = 0

    def free_bytes(self) -> int:
        if self.cuda:
            return torch.cuda.mem_get_info(self.device)[0]
        return cpu_available_bytes()

    def total_bytes(self) -> int | None:
        if self.cuda:
            return torch.cuda.mem_get_info(self.device)[1]
        return None

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def allocated(self) -> int:
        if self.cuda:
            return torch.cuda.memory_allocated(self.device)
        return self.persistent + (self._tracker.live if self._tracker else 0)

    @contextlib.contextmanager
    def phase(self):
        """Measure the peak allocated bytes while the block runs (``self.peak`` afterwards)."""
        if self.cuda:
            self.sync()
            torch.cuda.reset_peak_memory_stats(self.device)
            try:
                yield
            finally:
                self.sync()
                self.peak = torch.cuda.max_memory_allocated(self.device)
            return
        tracker = _LiveStorages()
        self._tracker = tracker
        try:
            with tracker:
                yield
        finally:
            self._tracker = None
            self.peak = self.persistent + tracker.peak
            self._leftover = tracker.live  # tensors created in the phase and still alive (e.g. logits)

    @property
    def leftover(self) -> int:
        return getattr(self, "_leftover", 0)
