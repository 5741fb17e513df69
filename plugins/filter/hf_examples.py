# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the hf_examples role: thin wrappers around plugins/module_utils/examples.py."""

from __future__ import annotations

from typing import Any, Callable, Dict

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex


def _wrap(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def _filter(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (ex.ExamplesError, TypeError, KeyError, AttributeError, ValueError) as exc:
            raise AnsibleFilterError(f"amx.cluster.{name}: {exc}") from exc

    _filter.__name__ = name
    _filter.__doc__ = func.__doc__
    return _filter


_FILTERS = {
    # url | hf_examples_input_problems(ref) -> messages (empty: both may reach git)
    "hf_examples_input_problems": ex.input_problems,
}


class FilterModule:
    """hf_examples filters."""

    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {name: _wrap(name, func) for name, func in _FILTERS.items()}
