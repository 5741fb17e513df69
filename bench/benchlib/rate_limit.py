# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bandwidth cap per client: one token bucket per client address, tokens being bytes.

A benchmark on one machine has every container download at the speed of the loopback; separate machines each have
a link of their own to the package index. A bucket per client address (each container has its own address on the
benchmark's network) gives every node, and the controller, its own link of `rate` bytes per second.

The bucket lets a sender go into debt: `take(n)` always grants the n bytes and returns how long to wait before
sending them, so a chunk larger than the bucket is paced rather than refused, and the long-run rate is exact.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Optional

Clock = Callable[[], float]


class TokenBucket:
    """`rate` bytes per second, up to `capacity` bytes saved while idle (the burst a fresh connection gets)."""

    def __init__(self, rate: float, capacity: float, clock: Clock = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError(f"a rate limit must be above 0 bytes per second, not {rate}")
        if capacity < 0:
            raise ValueError(f"a bucket holds 0 bytes or more, not {capacity}")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self.clock = clock
        self.tokens = self.capacity
        self.updated = clock()
        self.lock = threading.Lock()

    def take(self, amount: float) -> float:
        """Reserve `amount` bytes; the seconds to wait before sending them (0 when the bucket holds them)."""
        if amount < 0:
            raise ValueError(f"cannot take {amount} bytes")
        with self.lock:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
            self.tokens -= amount
            return max(0.0, -self.tokens / self.rate)


class PerClientLimit:
    """One TokenBucket per client address, made on the client's first request; what each was sent, counted."""

    def __init__(self, rate: float, capacity: Optional[float] = None, clock: Clock = time.monotonic) -> None:
        self.rate = rate
        self.capacity = min(rate, 64 * 1024) if capacity is None else capacity
        self.clock = clock
        self.buckets: Dict[str, TokenBucket] = {}
        self.sent: Dict[str, int] = {}
        self.lock = threading.Lock()

    def bucket(self, client: str) -> TokenBucket:
        with self.lock:
            if client not in self.buckets:
                self.buckets[client] = TokenBucket(self.rate, self.capacity, self.clock)
                self.sent[client] = 0
            return self.buckets[client]

    def take(self, client: str, amount: int) -> float:
        """Reserve `amount` bytes for `client`; the seconds to wait before sending them."""
        wait = self.bucket(client).take(amount)
        with self.lock:
            self.sent[client] += amount
        return wait


def parse_rate(text: str) -> float:
    """'25MB' / '25 MB/s' / '500kB' / '1000' (bytes) per second, decimal units as pip prints them, in bytes/s."""
    units = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3}
    cleaned = text.strip().lower().replace(" ", "")
    if cleaned.endswith("/s"):
        cleaned = cleaned[:-2]
    number = cleaned.rstrip("kmgb")
    unit = cleaned[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in units or value <= 0:
        raise ValueError(f"a rate is a positive number with an optional unit (kB, MB, GB per second), not {text!r}")
    return value * units[unit]
