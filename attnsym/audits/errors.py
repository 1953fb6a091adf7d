"""The audit's errors (each also an :class:`~attnsym.errors.AttnsymError`)."""

from __future__ import annotations

from ..errors import AttnsymError

__all__ = ["AuditError"]


class AuditError(AttnsymError, RuntimeError):
    """An audit that cannot go on: another audit's folder, a worker lost twice on one text, a worker's other weights."""
