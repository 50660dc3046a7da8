"""Trust scores of external agents: how far routing by capability relies on a peer outside the deployment.

An agent of the deployment publishes no trust score and routing treats it as 1. An
external A2A agent is attached through a proxy instance, which records the outcome of
each call it forwards (:meth:`TrustTracker.record`) and publishes
:meth:`TrustTracker.score` with every heartbeat (``InstanceState.trust``).

The score, from the observations ``i`` (success ``ok_i`` in {0, 1}, latency ``l_i``
seconds, time ``t_i``)::

    q_i   = ok_i * (1 - W * (1 - min(1, L / l_i)))    quality of one call: a failure is 0, a
                                                      success 1, less up to W when slower
                                                      than the target latency L
    w_i   = 2 ** (-(now - t_i) / H)                   its weight: halves every half-life H
    n     = sum(w_i)                                  evidence: recent calls, decayed
    raw   = (K * b + sum(w_i * q_i)) / (K + n)        the base b blended with the observed
                                                      quality; K calls weigh as much as b
    trust = min(1, raw + V)    card signature verified
            min(U, raw)        card unsigned
            min(X, raw)        card signature failed to verify

Defaults: b = 0.5, H = 600 s, L = 5 s, W = 0.5 (a success, however slow, counts at least
half), K = 5, bonus V = 0.1, ceilings U = 0.9 and X = 0.1 (under the default routing
floor of 0.2: a peer whose card fails to verify is never chosen by capability).

So with no observations trust is the base (after the signature rule); ``raw - b`` is
``n / (K + n) * (mean quality - b)``, which shrinks toward 0 as time passes without
calls; trust never decreases with a success in place of a failure, a lower latency, or
a higher base; and it stays in [0, 1]. Routing by capability ranks an instance by its
match score times its trust and skips instances whose trust is under the floor
(``discovery.scoring``).
"""

from __future__ import annotations

import math
from typing import get_args

from .profile import CardSignature

__all__ = [
    "DEFAULT_BASE",
    "DEFAULT_HALF_LIFE",
    "DEFAULT_PRIOR_WEIGHT",
    "DEFAULT_TARGET_LATENCY",
    "DEFAULT_TRUST_FLOOR",
    "INVALID_CEILING",
    "UNSIGNED_CEILING",
    "VERIFIED_BONUS",
    "TrustTracker",
    "check_floor",
    "check_trust",
    "signature_rule",
]

DEFAULT_BASE = 0.5
"""What the operator trusts an external peer before any call."""
DEFAULT_HALF_LIFE = 600.0
"""Seconds after which an observation weighs half as much."""
DEFAULT_TARGET_LATENCY = 5.0
"""Seconds a call may take without its success counting less."""
DEFAULT_LATENCY_WEIGHT = 0.5
"""How much of a success latency can take away (a success counts at least 1 - this)."""
DEFAULT_PRIOR_WEIGHT = 5.0
"""Recent calls that weigh as much as the base."""
DEFAULT_TRUST_FLOOR = 0.2
"""Instances trusted less are skipped by routing by capability."""
VERIFIED_BONUS = 0.1
UNSIGNED_CEILING = 0.9
INVALID_CEILING = 0.1

_SIGNATURES = frozenset(get_args(CardSignature))


def _finite(name: str, value: float, low: float, high: float = math.inf) -> float:
    if not (isinstance(value, int | float) and low <= value <= high and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number in [{low}, {high}], got {value!r}")
    return float(value)


def check_floor(floor: float) -> float:
    """``floor`` if it is a valid trust floor (a number in [0, 1]), else ValueError."""
    return _finite("trust floor", floor, 0.0, 1.0)


def check_trust(trust: float) -> float:
    """``trust`` if it is a valid trust score (a number in [0, 1]), else ValueError."""
    return _finite("trust", trust, 0.0, 1.0)


def signature_rule(raw: float, signature: CardSignature) -> float:
    """The trust of a peer with blended score ``raw`` and this card signature state, in [0, 1]."""
    if signature == "verified":
        trust = raw + VERIFIED_BONUS
    elif signature == "unsigned":
        trust = min(raw, UNSIGNED_CEILING)
    else:
        trust = min(raw, INVALID_CEILING)
    return min(1.0, max(0.0, trust))


class TrustTracker:
    """One external peer's trust score, from its calls as its proxy sees them (module docstring).

    ``now`` is seconds on one monotonic clock (``time.monotonic()``), the same for
    :meth:`record` and :meth:`score`. Memory and time per call are constant: the decayed
    sums are kept, not the observations.

    Raises:
        ValueError: a parameter out of range (base and latency weight in [0, 1], half-life,
            target latency and prior weight positive), or an unknown signature state.
    """

    def __init__(
        self,
        *,
        base: float = DEFAULT_BASE,
        signature: CardSignature = "unsigned",
        half_life: float = DEFAULT_HALF_LIFE,
        target_latency: float = DEFAULT_TARGET_LATENCY,
        latency_weight: float = DEFAULT_LATENCY_WEIGHT,
        prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    ) -> None:
        self.base = _finite("base", base, 0.0, 1.0)
        self.signature = signature
        self.half_life = _finite("half_life", half_life, math.ulp(0.0))
        self.target_latency = _finite("target_latency", target_latency, math.ulp(0.0))
        self.latency_weight = _finite("latency_weight", latency_weight, 0.0, 1.0)
        self.prior_weight = _finite("prior_weight", prior_weight, math.ulp(0.0))
        self._evidence = 0.0
        """Sum of the weights of the observations, as of ``_at``."""
        self._quality = 0.0
        """Sum of weight times quality, as of ``_at``."""
        self._at = -math.inf

    @property
    def signature(self) -> CardSignature:
        return self._signature

    @signature.setter
    def signature(self, value: CardSignature) -> None:
        if value not in _SIGNATURES:
            raise ValueError(f"signature must be one of {sorted(_SIGNATURES)}, got {value!r}")
        self._signature = value

    def quality(self, ok: bool, latency_s: float) -> float:
        """How one call counts, in [0, 1]: 0 for a failure, 1 for a success within the target latency."""
        if not ok:
            return 0.0
        speed = 1.0 if latency_s <= self.target_latency else self.target_latency / latency_s
        return 1.0 - self.latency_weight * (1.0 - speed)

    def record(self, ok: bool, latency_s: float, now: float) -> None:
        """Count one call that succeeded (``ok``) or failed after ``latency_s`` seconds, at ``now``.

        Raises:
            ValueError: a negative or NaN latency (infinite is the slowest), a non-finite ``now``.
        """
        if math.isnan(latency_s) or latency_s < 0:
            raise ValueError(f"latency must be a non-negative number of seconds, got {latency_s!r}")
        if not math.isfinite(now):
            raise ValueError(f"now must be a finite time, got {now!r}")
        if now >= self._at:
            decay = self._decay(now - self._at) if self._evidence else 0.0
            self._evidence *= decay
            self._quality *= decay
            self._at = now
            weight = 1.0
        else:  # a call that ended before the last one recorded: it weighs what it would have
            weight = self._decay(self._at - now)
        self._evidence += weight
        self._quality += weight * self.quality(ok, latency_s)

    def evidence(self, now: float) -> float:
        """The decayed number of observations at ``now`` (``n`` of the module docstring)."""
        return self._evidence * self._decay(now - self._at) if self._evidence else 0.0

    def score(self, now: float) -> float:
        """The trust score at ``now``, in [0, 1]."""
        decay = self._decay(now - self._at) if self._evidence else 0.0
        evidence, quality = self._evidence * decay, self._quality * decay
        raw = (self.prior_weight * self.base + quality) / (self.prior_weight + evidence)
        return signature_rule(raw, self._signature)

    def _decay(self, elapsed: float) -> float:
        """The weight left after ``elapsed`` seconds (a time before the last record: no decay)."""
        return 1.0 if elapsed <= 0 else 2.0 ** (-elapsed / self.half_life)
