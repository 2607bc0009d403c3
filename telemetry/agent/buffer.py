"""The agent's bounded sample buffer: what it holds while the control plane is unreachable.

Samples wait here until an upload is acknowledged; nothing within the bound is lost, and an
upload that fails leaves the buffer as it was. Beyond the bound the oldest samples go first
(fresh readings matter more to a scheduler than old ones) and are counted, and the count is
reported with every upload. Thread-safe: the sampler adds while the main loop uploads.
"""
import threading
from collections import deque


class SampleBuffer:
    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("the buffer must hold at least one sample")
        self.capacity = capacity
        self.dropped = 0
        self._items: deque = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def extend(self, items) -> None:
        with self._lock:
            for item in items:
                if len(self._items) == self.capacity:
                    self._items.popleft()
                    self.dropped += 1
                self._items.append(item)

    def peek(self, limit: int) -> list:
        """The oldest `limit` items, left in place until commit()."""
        with self._lock:
            return [self._items[i] for i in range(min(limit, len(self._items)))]

    def commit(self, batch: list) -> None:
        """Remove a batch returned by peek() once the control plane has it. Items the sampler
        pushed out meanwhile (overflow) are not removed twice."""
        with self._lock:
            for item in batch:
                if self._items and self._items[0] is item:
                    self._items.popleft()
