"""``build_argv``: the one place that decides how command channels become argv (preflight-adapter.md §4.3).

The spawn never goes through a shell, so each value is exactly one argv element and no value can
inject a command. Options come first (in key order), then positionals. ``false`` omits an option,
``true`` is a bare flag, an array repeats the flag once per element; a ``--no-x`` flag is its own key.

The one decision that is not obvious: key order mirrors JavaScript's object order (integer-like keys
first, ascending, then the rest in insertion order), and numbers are written as JavaScript ``String()``
writes them (``1.0`` → ``"1"``, ``1e21`` → ``"1e+21"``). So a request that went through canonical JSON
(a cache round trip, a file) builds the same argv as the reference would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import rfc8785

__all__ = ["build_argv", "js_key_order", "js_string_of", "json_stringify", "option_tokens", "positional_tokens"]

_MAX_ARRAY_INDEX = 2**32 - 2


def _is_array_index(key: str) -> bool:
    # ECMAScript "array index": the canonical decimal form of an integer in 0 .. 2^32-2.
    return key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")) and int(key) <= _MAX_ARRAY_INDEX


def js_key_order(record: Mapping[str, Any]) -> list[str]:
    """The keys of ``record`` in JavaScript own-property order."""
    indices = sorted((k for k in record if _is_array_index(k)), key=int)
    return indices + [k for k in record if not _is_array_index(k)]


def _number_text(value: int | float) -> str:
    # RFC 8785 numbers are exactly ECMAScript Number::toString.
    return rfc8785.dumps(value).decode("utf-8")


def json_stringify(value: Any) -> str:
    """JavaScript ``JSON.stringify`` (compact, JS key order) of a JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _number_text(value)
    if isinstance(value, str):
        return rfc8785.dumps(value).decode("utf-8")
    if isinstance(value, Sequence):
        return "[" + ",".join(json_stringify(member) for member in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json_stringify(k)}:{json_stringify(value[k])}" for k in js_key_order(value)) + "}"
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def js_string_of(value: Any) -> str:
    """The string form of one value: a string as-is, a number or boolean as ``String()`` writes it,
    null and objects/arrays as ``JSON.stringify`` writes them."""
    # String() and JSON.stringify agree on everything but a string, which String() leaves unquoted.
    return value if isinstance(value, str) else json_stringify(value)


def option_tokens(option: Mapping[str, Any]) -> list[str]:
    """``--key`` tokens for the option channel (§4.3)."""
    tokens: list[str] = []
    for key in js_key_order(option):
        value = option[key]
        if value is False:
            continue
        if value is True:
            tokens.append(f"--{key}")
        elif isinstance(value, list):
            for member in value:
                tokens.extend((f"--{key}", js_string_of(member)))
        else:
            tokens.extend((f"--{key}", js_string_of(value)))
    return tokens


def positional_tokens(argument: Mapping[str, Any]) -> list[str]:
    """Positional tokens: each scalar one token, each array element one token, in key order."""
    tokens: list[str] = []
    for key in js_key_order(argument):
        value = argument[key]
        if isinstance(value, list):
            tokens.extend(js_string_of(member) for member in value)
        else:
            tokens.append(js_string_of(value))
    return tokens


def build_argv(
    subcommand_path: Sequence[str],
    option: Mapping[str, Any],
    argument: Mapping[str, Any],
    *,
    end_of_options: str | None = None,
) -> list[str]:
    """``[*subcommandPath, *optionTokens, *positionalTokens]`` — everything after the target itself.

    With an ``end_of_options`` marker (a registry entry's ``end_of_options``, usually ``"--"``), the
    marker goes between the options and the positionals whenever there is a positional, so no
    positional can be read as a flag. Without one the argv is exactly the reference's.
    """
    positionals = positional_tokens(argument)
    marker = [end_of_options] if end_of_options is not None and positionals else []
    return [*subcommand_path, *option_tokens(option), *marker, *positionals]
