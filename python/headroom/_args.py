"""Argument checks of the public functions: a ValueError or TypeError that names the
argument and what it takes, raised before anything reaches the C++ core (whose own
errors name CLI flags, and whose argument conversion errors print every argument,
the environment included)."""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, Union


def check_count(value: Any, name: str, minimum: int = 0) -> int:
    """An int >= minimum (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_number(value: Any, name: str) -> float:
    """A finite real number (int or float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def check_seconds(value: Any, name: str, allow_zero: bool = False) -> float:
    """Seconds: positive (or zero when allowed)."""
    seconds = check_number(value, name)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else 'positive'} seconds, "
                         f"got {value}")
    return seconds


def check_percent(value: Any, name: str) -> float:
    """A percentage as a float; its range is the core's rule (core/thresholds.h)."""
    return check_number(value, name)


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def check_callable(value: Optional[Callable[..., Any]], name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")


def check_environment(environment: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """The job's environment as a dict of str; os.environ when None. Never echoes a value:
    environments hold secrets."""
    if environment is None:
        return dict(os.environ)
    if not isinstance(environment, Mapping):
        raise TypeError(f"environment must be a mapping of str to str (like os.environ), got "
                        f"{type(environment).__name__}")
    bad = sum(1 for key, value in environment.items()
              if not isinstance(key, str) or not isinstance(value, str))
    if bad:
        raise TypeError(f"environment must map str to str; {bad} entr{'y is' if bad == 1 else 'ies are'} "
                        f"not str")
    return dict(environment)


def check_path(value: Any, name: str) -> str:
    """A str or os.PathLike naming a path."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str) and path:
            return path
    raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}")


def one_or_list(value: Any, single: Union[Type[Any], Tuple[Type[Any], ...]], what: str) -> List[Any]:
    """`value` as a list: a lone `single` becomes [value]; any other iterable is listed.
    A TypeError says `what` was expected."""
    if isinstance(value, single):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{what}, got {type(value).__name__}") from None
