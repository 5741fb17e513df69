# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure functions behind the hf_examples role: what a repository URL and a ref may look like before git sees them.

A URL or a ref that starts with ``-`` reaches git as an option (``--upload-pack=CMD`` runs CMD); a transport such
as ``ext::`` runs a command by design. The role checks both here, before any command, and also passes ``--``
between git's options and its arguments.

No Ansible imports: the filter plugin wraps these, and the unit tests call them directly.
"""

from __future__ import annotations

import re
from typing import Any, List

# The URL forms the role accepts (README "Repository URL"): https, ssh, git and file URLs, scp-like
# [user@]host:path, and an absolute local path. http is left out (no transport security), and so is every
# "<transport>::<address>" form (ext:: runs a command), like any other scheme.
URL_SCHEMES = ("https", "ssh", "git", "file")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"
_USER = r"[A-Za-z0-9._~%+-]+"
_PATH_CHARS = r"[A-Za-z0-9._~%+=,@/:-]"
_NETWORK_URL = re.compile(
    rf"^(?P<scheme>https|ssh|git)://(?:{_USER}(?::[^@/\s]*)?@)?(?P<host>{_HOST})(?::[0-9]{{1,5}})?(?P<path>/{_PATH_CHARS}*)?$"
)
_FILE_URL = re.compile(rf"^file://(?P<path>/{_PATH_CHARS}*)$")
_SCP_LIKE = re.compile(rf"^(?:{_USER}@)?(?P<host>{_HOST}):(?P<path>{_PATH_CHARS}+)$")
_LOCAL_PATH = re.compile(rf"^/{_PATH_CHARS}*$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)(://|::)")


class ExamplesError(ValueError):
    """Bad user input to hf_examples; the message says what to change."""


def _printable(value: str) -> str:
    """The value as it may be shown in an error: control characters as escapes, at most 200 characters."""
    shown = value.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 200 else shown[:200] + "..."


def repo_url_problem(url: Any) -> str:
    """Why ``url`` may not reach git, or "" when it is one of the accepted forms.

    Accepted: ``https://host[:port]/path``, ``ssh://[user@]host[:port]/path``, ``git://host[:port]/path``,
    ``file:///path``, scp-like ``[user@]host:path`` and an absolute local path ``/path``.
    """
    fix = (
        "set hf_examples_repo_url to an https://, ssh://, git:// or file:// URL, a user@host:path address or an "
        "absolute path"
    )
    if not isinstance(url, str) or not url:
        return f"hf_examples_repo_url must be a non-empty string (got {type(url).__name__}): {fix}"
    shown = _printable(url)
    if url.startswith("-"):
        return f"hf_examples_repo_url '{shown}' starts with '-', which git would read as an option: {fix}"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return f"hf_examples_repo_url '{shown}' holds a space or a control character: {fix}"
    scheme = _SCHEME.match(url)
    if scheme and scheme.group(2) == "::":
        return (
            f"hf_examples_repo_url '{shown}' names the git transport '{scheme.group(1)}::', which the role does not "
            f"allow (a transport can run commands): {fix}"
        )
    if scheme and scheme.group(1).lower() not in URL_SCHEMES:
        hint = " (use https://)" if scheme.group(1).lower() == "http" else ""
        return f"hf_examples_repo_url '{shown}' has the scheme '{scheme.group(1)}'{hint}, not one of " + (
            f"{', '.join(URL_SCHEMES)}: {fix}"
        )
    # A URL with a scheme must match its own form; the others are scp-like addresses or local paths.
    patterns = (_NETWORK_URL, _FILE_URL) if scheme else (_SCP_LIKE, _LOCAL_PATH)
    if any(pattern.match(url) for pattern in patterns):
        return ""
    return f"hf_examples_repo_url '{shown}' is not a URL form the role accepts: {fix}"


def ref_problem(ref: Any) -> str:
    """Why ``ref`` (a tag, a branch or a commit) may not reach git, or "" when it is a plain ref name.

    The rules of ``git check-ref-format`` that matter here, plus: no leading ``-`` (an option to git).
    """
    fix = (
        "set hf_examples_version to a tag such as v4.24.0, a branch or a commit id (or fix "
        "hf_examples_transformers_version)"
    )
    if not isinstance(ref, str) or not ref:
        return f"hf_examples_version must be a non-empty string (got {type(ref).__name__}): {fix}"
    shown = _printable(ref)
    if ref.startswith("-"):
        return f"hf_examples_version '{shown}' starts with '-', which git would read as an option: {fix}"
    bad = (
        any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 or ch in "~^:?*[\\" for ch in ref)
        or ".." in ref
        or "@{" in ref
        or "//" in ref
        or ref.startswith("/")
        or ref.endswith(("/", ".", ".lock"))
        or any(part.startswith(".") for part in ref.split("/"))
        or ref == "@"
    )
    if bad:
        return f"hf_examples_version '{shown}' is not a valid git ref name: {fix}"
    return ""


def input_problems(url: Any, ref: Any) -> List[str]:
    """Every problem of the repository URL and the ref, one message each (empty: both may reach git)."""
    return [problem for problem in (repo_url_problem(url), ref_problem(ref)) if problem]
