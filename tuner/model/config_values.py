"""Numbers read from config.json, checked: a whole number in range, or a ``ModelSpecError`` naming the file,
the field, the value and the fix. ``int()`` alone once turned ``hidden_size: 256.5`` into 256, and let
``max_position_embeddings: -4096`` or ``hidden_size: 0`` through to a budget of negative KV bytes
called FEASIBLE; a JSON list instead of an object ended in a traceback.
"""

from __future__ import annotations

from typing import Any

from tuner.errors import ModelSpecError

MAX = 1 << 40  # far above any real size or count; keeps every derived figure finite
_MISSING: Any = object()


class ConfigValues:
    """A config.json object (or a part of it, ``where`` naming which) read with checks."""

    def __init__(self, data: Any, source: str, where: str = "") -> None:
        if not isinstance(data, dict):
            raise ModelSpecError(
                f"{source}: {where or 'the file'} must be a JSON object of fields, got {type(data).__name__}; "
                "fix or re-download config.json"
            )
        self.data, self.source, self.where = data, source, where

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def part(self, key: str) -> ConfigValues | None:
        """A nested object, or None when absent/null/empty."""
        value = self.data.get(key)
        return ConfigValues(value, self.source, self._name(key)) if value else None

    def whole(self, key: str, why: str = "", *, low: int = 1, default: Any = _MISSING) -> int:
        """Field ``key`` as a whole number ≥ ``low``; ``default`` when absent or null (required without one)."""
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise ModelSpecError(
                    f"{self.source}: field '{self._name(key)}' is missing (needed for {why or 'the KV budget'}); "
                    "copy it from the model's published config.json"
                )
            return int(default)
        return self.check(key, value, low)

    def check(self, key: str, value: Any, low: int = 1) -> int:
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not integral or not low <= value <= MAX:
            valid = f"a whole number ≥ {low}" if not integral or value < low else f"at most {MAX} (2**40)"
            raise ModelSpecError(
                f"{self.source}: field '{self._name(key)}' is {value!r}; it must be {valid} — fix config.json "
                "(copy the value from the model's published config)"
            )
        return int(value)

    def wholes(self, key: str, low: int = 0) -> tuple[int, ...]:
        """A list of whole numbers (e.g. layer indices); empty when absent."""
        value = self.data.get(key) or []
        if not isinstance(value, list):
            raise ModelSpecError(f"{self.source}: field '{self._name(key)}' must be a list of numbers, got {value!r}")
        return tuple(self.check(key, v, low) for v in value)
