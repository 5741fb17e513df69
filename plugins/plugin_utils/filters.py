# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one error wrapper of the collection's filters: a module_utils function behind a filter name."""

from __future__ import annotations

from typing import Any, Callable, Tuple, Type

from ansible.errors import AnsibleFilterError

# What module_utils functions raise for bad input (their own errors are ValueError subclasses).
INPUT_ERRORS: Tuple[Type[BaseException], ...] = (TypeError, ValueError, KeyError, AttributeError)


def filter_function(
    name: str, func: Callable[..., Any], errors: Tuple[Type[BaseException], ...] = INPUT_ERRORS
) -> Callable[..., Any]:
    """``func`` as the filter ``amx.cluster.<name>``: bad input becomes an AnsibleFilterError naming the filter."""

    def _filter(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except errors as exc:
            raise AnsibleFilterError(f"amx.cluster.{name}: {exc}") from exc

    _filter.__name__ = name
    _filter.__doc__ = func.__doc__
    return _filter
