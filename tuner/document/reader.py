"""Typed reads of a parsed JSON document: each value by its key, of the kind its record holds. A missing key,
or a value of another kind, raises DocumentError naming where it sits ("best.config", "certifications[2]").

``opt_*`` reads a key older files may lack: absent and null both read as None."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


class DocumentError(ValueError):
    """A key the document lacks, or a value of another kind than its record holds (one line)."""


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class Fields:
    """One JSON object of a document, and where it sits in it ("" for the top)."""

    def __init__(self, data: object, where: str = "") -> None:
        if not isinstance(data, Mapping):
            raise DocumentError(f"'{where or 'the document'}' is {_kind(data)}, not a JSON object")
        self.data: Mapping[str, object] = data
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str) -> object:
        """The value under ``key`` (null included); DocumentError when the key is missing."""
        if key not in self.data:
            raise DocumentError(f"no key '{self.path(key)}'")
        return self.data[key]

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def _wrong(self, key: str, value: object, wanted: str) -> DocumentError:
        return DocumentError(f"'{self.path(key)}' is {_kind(value)}, not {wanted}")

    def text(self, key: str) -> str:
        value = self.get(key)
        if not isinstance(value, str):
            raise self._wrong(key, value, "a string")
        return value

    def number(self, key: str) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(key, value, "a number")
        return float(value)

    def integer(self, key: str) -> int:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, value, "an integer")
        return value

    def flag(self, key: str) -> bool:
        value = self.get(key)
        if not isinstance(value, bool):
            raise self._wrong(key, value, "true or false")
        return value

    def opt_text(self, key: str) -> str | None:
        return self.text(key) if self.has(key) else None

    def opt_number(self, key: str) -> float | None:
        return self.number(key) if self.has(key) else None

    def opt_integer(self, key: str) -> int | None:
        return self.integer(key) if self.has(key) else None

    def opt_flag(self, key: str) -> bool | None:
        return self.flag(key) if self.has(key) else None

    def obj(self, key: str) -> Fields:
        return Fields(self.get(key), self.path(key))

    def opt_obj(self, key: str) -> Fields | None:
        return self.obj(key) if self.has(key) else None

    def items(self, key: str) -> list[object]:
        value = self.get(key)
        if not isinstance(value, list):
            raise self._wrong(key, value, "a list")
        return value

    def objs(self, key: str) -> tuple[Fields, ...]:
        return tuple(Fields(v, f"{self.path(key)}[{i}]") for i, v in enumerate(self.items(key)))

    def numbers(self, key: str) -> tuple[float, ...]:
        values = self.items(key)
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float)]
        if bad:
            raise self._wrong(key, bad[0], "a list of numbers")
        return tuple(float(v) for v in values if isinstance(v, int | float))

    def texts(self, key: str, nulls: bool = False) -> tuple[str | None, ...]:
        """A list of strings (``nulls``: null entries allowed, read as None)."""
        values = self.items(key)
        bad = [v for v in values if not isinstance(v, str) and (v is not None or not nulls)]
        if bad:
            raise self._wrong(key, bad[0], "a list of strings")
        return tuple(v if isinstance(v, str) else None for v in values)

    def mapping(self, key: str) -> dict[str, object]:
        """The JSON object under ``key`` as it is (what a record with its own ``from_dict`` reads)."""
        return dict(self.obj(key).data)

    def record(self, parse: Callable[[dict[str, object]], T]) -> T:
        """This object read by a record's own ``from_dict``; what it raises is named by where it sits."""
        try:
            return parse(dict(self.data))
        except KeyError as exc:
            raise DocumentError(f"no key '{exc.args[0]}' in '{self.where}'") from None
        except (TypeError, ValueError) as exc:
            raise DocumentError(f"'{self.where}' is malformed ({' '.join(str(exc).split())})") from None
