# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure functions behind the hf_examples role and its action amx.cluster.examples_plan: what a repository URL and a
ref may look like before git sees them, every other check of the role's settings, and the values its tasks use
(indexes, constraints, the controller's download).

A URL or a ref that starts with ``-`` reaches git as an option (``--upload-pack=CMD`` runs CMD); a transport such
as ``ext::`` runs a command by design. The role checks both here, before any command, and also passes ``--``
between git's options and its arguments.

No Ansible imports: the action plugin calls ``plan``, and the unit tests call these directly.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.python_facts import MARKER_KEYS
from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import (
    KERNEL_MARKER_KEYS,
    StackProfileError,
    index_args,
    major_minor,
    normalize_name,
    parse_lock,
    platform_tags,
    wheels_missing,
)

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


# ------------------------------------------------------------------------------------------------------------------
# The example's requirements, resolved on the controller for the nodes.
#
# pip download takes --python-version, --platform and --implementation for the wheels it picks, but it evaluates
# environment markers (``pkg; python_version < "3.10"``, in a requirements file and in every dependency's metadata)
# with the interpreter that runs it: the controller's. The roles therefore run pip through a small runner
# (plugins/plugin_utils/pip_node_markers.py, started by the amx.cluster.wheelhouse_fetch action) that hands pip the
# node's PEP 508 marker values, read on the node by the amx.cluster.node_info module (python_facts.MARKER_KEYS).

# Marker values that change with every kernel update (stack_profile.KERNEL_MARKER_KEYS): kept in the download's
# marker values (the first node's), left out of the download's key.

_IMPLEMENTATION_TAGS = {"cpython": "cp", "pypy": "pp"}


def marker_environment(values: Any) -> Dict[str, str]:
    """The node's marker values (from amx.cluster.node_info), checked: every PEP 508 variable, each a string."""
    if not isinstance(values, Mapping):
        raise ExamplesError(f"the node's marker values must be a mapping, got {type(values).__name__}")
    missing = [key for key in MARKER_KEYS if key not in values]
    if missing:
        raise ExamplesError(f"the node's marker values lack {', '.join(missing)}")
    wrong = [key for key in MARKER_KEYS if not isinstance(values[key], str)]
    if wrong:
        raise ExamplesError(f"the node's marker values {', '.join(wrong)} are not strings")
    if values["implementation_name"] not in _IMPLEMENTATION_TAGS:
        raise ExamplesError(
            f"the node's Python is {values['implementation_name']}, not CPython or PyPy: no wheel tag fits it; use "
            "hf_examples_install_mode: direct"
        )
    return {key: values[key] for key in MARKER_KEYS}


def constraints_text(freeze_text: str, lock: Sequence[str] = ()) -> str:
    """Constraints that keep every package of the virtualenv where it is: ``name==version`` per line of ``pip
    freeze``. A package installed from a URL or a file (``name @ URL``) has no version to pin and is left out. ``lock``
    (torch_stack_constraints: the profile's lock, ``name==version`` lines) adds the version of every package the
    virtualenv does not hold yet, so that the example's requirements take their locked release too."""
    pins = {}
    for raw in (freeze_text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "-")) or " @ " in line or "==" not in line:
            continue
        name, version = line.split("==", 1)
        pins[normalize_name(name)] = version.strip()
    if isinstance(lock, (str, bytes)) or not all(isinstance(line, str) for line in lock or ()):
        raise ExamplesError("the profile's lock must be a list of name==version lines")
    for name, version in parse_lock("\n".join(lock or ())).items():
        pins.setdefault(name, version)
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


def effective_indexes(
    published: Any = None,
    index_url: Any = None,
    extra_index_urls: Any = None,
    find_links: Any = None,
) -> Dict[str, Any]:
    """The indexes of the requirements: each of ``index_url`` / ``extra_index_urls`` / ``find_links`` that is not
    None, else the one torch_stack published for the node's profile (``torch_stack_indexes``: its profile's list,
    without the extra indexes its check left out), else pip's own (null, []). ``index_url: ""`` is pip's default."""
    base = published if isinstance(published, Mapping) else {}
    chosen = {
        "index_url": index_url if index_url is not None else base.get("index_url"),
        "extra_index_urls": extra_index_urls if extra_index_urls is not None else base.get("extra_index_urls"),
        "find_links": find_links if find_links is not None else base.get("find_links"),
    }
    if chosen["index_url"] is not None and not isinstance(chosen["index_url"], str):
        raise ExamplesError("hf_examples_index_url must be a URL string or null")
    for key in ("extra_index_urls", "find_links"):
        value = chosen[key] or []
        if isinstance(value, str) or not all(isinstance(url, str) and url for url in value):
            raise ExamplesError(f"hf_examples_{key} must be a list of URLs or paths, or null")
        chosen[key] = list(value)
    chosen["index_url"] = chosen["index_url"] or None
    return chosen


def download_spec(
    requirements: str,
    freeze_text: str,
    probe: Any,
    indexes: Mapping[str, Any],
    platforms: Sequence[str],
    lock: Sequence[str] = (),
) -> Dict[str, Any]:
    """What one node needs downloaded: the requirements, the constraints of its virtualenv (and the profile's
    ``lock``, see constraints_text), its marker values, its Python major.minor and platform tags, the indexes, and
    ``key``, a hash of all that but the kernel's marker values. Nodes with the same key share one download."""
    markers = marker_environment(probe)
    spec = {
        "requirements": str(requirements),
        "constraints": constraints_text(freeze_text, lock),
        "python": major_minor(markers["python_version"]),
        "implementation": _IMPLEMENTATION_TAGS[markers["implementation_name"]],
        "platforms": list(platforms),
        "indexes": effective_indexes(
            None, indexes.get("index_url"), indexes.get("extra_index_urls"), indexes.get("find_links")
        ),
        "markers": markers,
    }
    keyed = dict(spec, markers={k: v for k, v in markers.items() if k not in KERNEL_MARKER_KEYS})
    text = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
    spec["key"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return spec


def download_args(spec: Mapping[str, Any], folder: str, extra_args: Sequence[str] = ()) -> List[str]:
    """The pip arguments (after the runner and its marker file) that download ``spec`` into ``folder``, which holds
    its requirements.in and constraints.txt: binary wheels only, for the node's Python, implementation and platform,
    from the spec's indexes."""
    args = ["download", "--disable-pip-version-check", "--dest", folder, "--only-binary=:all:"]
    args += ["--implementation", spec["implementation"], "--python-version", spec["python"]]
    for tag in spec["platforms"]:
        args += ["--platform", tag]
    args += index_args(spec["indexes"])
    args += [str(arg) for arg in extra_args]
    return [*args, "-c", f"{folder}/constraints.txt", "-r", f"{folder}/requirements.in"]


def controller_pip_problem(controller_pip: Any, variable: str = "hf_examples_controller_pip") -> str:
    """Why the controller's pip command (``variable``: hf_examples_controller_pip, torch_stack_controller_pip) cannot
    carry the nodes' marker values, or "" when it can: it must be ``[PYTHON, -m, pip, *pip's global options]``."""
    argv = list(controller_pip) if isinstance(controller_pip, (list, tuple)) else None
    if argv is None or len(argv) < 3 or [str(a) for a in argv[1:3]] != ["-m", "pip"] or not argv[0]:
        role = variable[: -len("_controller_pip")] if variable.endswith("_controller_pip") else variable
        return (
            f"{variable} is {controller_pip!r}: in wheelhouse mode it must be [PYTHON, -m, pip] (pip's global options "
            "may follow), because the role runs that Python's pip with the nodes' marker values: set it so, or use "
            f"{role}_install_mode: direct"
        )
    return ""


def controller_command(
    controller_pip: Sequence[str], runner: str, markers_file: str, variable: str = "hf_examples_controller_pip"
) -> List[str]:
    """The command that runs the controller's pip with a node's marker values; the runner takes the place of
    ``-m pip`` in the controller's pip command (``variable`` names it in the error)."""
    problem = controller_pip_problem(controller_pip, variable)
    if problem:
        raise ExamplesError(problem)
    argv = [str(arg) for arg in controller_pip]
    return [argv[0], runner, markers_file, *argv[3:]]


# ------------------------------------------------------------------------------------------------------------------
# What a training script imports, against what the virtualenv holds.

# The third-party packages each script imports at the top (torch comes with transformers' own imports). The examples
# are the folders under examples/pytorch/ of transformers; qa_finetune is the collection's own script.
SCRIPT_IMPORTS = {
    "question-answering": ("run_qa.py", ("torch", "transformers", "datasets", "evaluate", "numpy")),
    "text-classification": ("run_glue.py", ("torch", "transformers", "datasets", "evaluate", "numpy")),
    "language-modeling": ("run_clm.py", ("torch", "transformers", "datasets", "evaluate")),
    "qa_finetune": ("qa_finetune.py", ("torch", "transformers", "datasets", "numpy")),
}


def script_problems(example: str, packages: Any, profile: Any = None) -> List[str]:
    """Why the virtualenv (``packages``: name -> version, torch_stack_packages) cannot run the example's script, one
    message per missing package; empty when it can, or when the example is not one whose imports are known."""
    if example not in SCRIPT_IMPORTS:
        return []
    if not isinstance(packages, Mapping):
        raise ExamplesError(f"the virtualenv's packages must be a mapping, got {type(packages).__name__}")
    script, needed = SCRIPT_IMPORTS[example]
    held = {normalize_name(str(name)) for name in packages}
    where = f"profile '{profile}' (torch_stack_profile)" if profile else "the virtualenv"
    return [
        f"{script} ({example}) imports {name}, which {where} does not install: add it to the profile with "
        f"torch_stack_extra_packages: ['{name}==VERSION'] (or stop dropping it in torch_stack_overrides), or choose a "
        "profile that carries it (every built-in profile does)"
        for name in needed
        if normalize_name(name) not in held
    ]


# ------------------------------------------------------------------------------------------------------------------
# The plan: every check of the settings at once, and the values the role's tasks use.
#
# ``settings`` holds the role's variables without their hf_examples_ prefix (repo_url, version, transformers_version,
# example, venv_python, install_requirements, install_mode, controller_pip, controller_pip_extra_args, depth, dir,
# node_wheelhouse, controller_cache, index_url, extra_index_urls, find_links); ``stack`` what amx.cluster.torch_stack
# published for the node (venv_python, packages, profile, indexes, constraints; None where it did not run).

_INSTALL_MODES = ("wheelhouse", "direct")


def _unknown(value: Any) -> bool:
    # "None": a default such as "{{ torch_stack_versions.transformers | default(none) }}" rendered as text.
    return value is None or str(value) in ("", "None")


def _uses_stack_venv(settings: Mapping[str, Any], stack: Mapping[str, Any]) -> bool:
    """Whether the virtualenv is torch_stack's: then its packages and its profile's lock apply."""
    return settings.get("venv_python") == stack.get("venv_python")


def requirement_indexes(settings: Mapping[str, Any], stack: Mapping[str, Any]) -> Dict[str, Any]:
    """The indexes of the requirements: the settings' where given, else torch_stack's (effective_indexes)."""
    return effective_indexes(
        stack.get("indexes"), settings.get("index_url"), settings.get("extra_index_urls"), settings.get("find_links")
    )


def settings_problems(settings: Mapping[str, Any], stack: Mapping[str, Any]) -> List[str]:
    """Every problem of the role's settings, one message each with the fix; empty when the role may go on. Only the
    settings: nothing here looks at the node."""
    problems = input_problems(settings.get("repo_url"), settings.get("version"))
    if _unknown(settings.get("transformers_version")):
        problems.append(
            "no transformers version to pick the examples tag from. Run amx.cluster.torch_stack first (it sets "
            "torch_stack_versions.transformers) or set hf_examples_transformers_version."
        )
    wants_venv = bool(settings.get("install_requirements"))
    if wants_venv and _unknown(settings.get("venv_python")):
        problems.append(
            "no virtualenv for the example's requirements. Run amx.cluster.torch_stack first (it sets "
            "torch_stack_venv_python) or set hf_examples_venv_python, or hf_examples_install_requirements: false."
        )
    # A virtualenv of someone else's (hf_examples_venv_python set apart) is not checked.
    if stack.get("packages") is not None and _uses_stack_venv(settings, stack):
        problems += script_problems(str(settings.get("example")), stack["packages"], stack.get("profile"))
    mode = settings.get("install_mode")
    if mode not in _INSTALL_MODES:
        problems.append("hf_examples_install_mode must be wheelhouse or direct.")
    wheelhouse = wants_venv and mode == "wheelhouse"
    if wheelhouse:
        problems += [p for p in [controller_pip_problem(settings.get("controller_pip"))] if p]
    depth = settings.get("depth")
    if not isinstance(depth, int) or depth < 0:
        problems.append(f"hf_examples_depth is {depth}: use 1 (shallow clone, the default) or 0 for the full history.")
    paths = ["dir"] + (["node_wheelhouse", "controller_cache"] if wheelhouse else [])
    for key in paths:
        value = settings.get(key)
        if not isinstance(value, str) or not posixpath.isabs(value):
            problems.append(
                f"hf_examples_{key} is '{value}', not an absolute path: set it to a full path such as "
                "/opt/amx-cluster/transformers."
            )
    try:
        requirement_indexes(settings, stack)
    except ExamplesError as error:
        problems.append(str(error))
    return problems


def stack_lock(settings: Mapping[str, Any], stack: Mapping[str, Any]) -> List[str]:
    """The lock of torch_stack's profile (torch_stack_constraints) when the virtualenv is torch_stack's: the example's
    requirements install at the lock's releases. Empty for a virtualenv of one's own."""
    return list(stack.get("constraints") or []) if _uses_stack_venv(settings, stack) else []


def node_download(
    settings: Mapping[str, Any], stack: Mapping[str, Any], requirements: str, freeze: str, node: Mapping[str, Any]
) -> Dict[str, Any]:
    """The download one node needs (download_spec) with where the controller keeps it (``dest``, under
    controller_cache by its key) and the pip arguments that fetch it (``args``, into ``dest``.partial)."""
    markers = node.get("markers")
    libc = list(node.get("libc") or [])
    machine = markers.get("platform_machine") if isinstance(markers, Mapping) else None
    try:
        platforms = platform_tags(str(machine or ""), libc[1] if len(libc) > 1 else None)
    except StackProfileError as error:
        # The message names torch_stack's install mode; here it is this role's that can avoid the wheels.
        raise ExamplesError(str(error).replace("torch_stack_install_mode", "hf_examples_install_mode")) from error
    indexes = requirement_indexes(settings, stack)
    spec = download_spec(requirements, freeze, markers, indexes, platforms, stack_lock(settings, stack))
    dest = f"{settings['controller_cache']}/{spec['key']}"
    spec["dest"] = dest
    spec["args"] = download_args(spec, dest + ".partial", settings.get("controller_pip_extra_args") or ())
    return spec


def checkout_problems(
    settings: Mapping[str, Any], checkout: Mapping[str, Any], controller_home: Optional[str], reported: Sequence[str]
) -> List[str]:
    """The checkout user, and the role's folders: never a system folder or the user's home (inputs.folder_problems,
    the collection's one list); an existing checkout folder is used as it is, so it must be a folder (or a link to
    one) that the user can write to. ``checkout`` is what the role's probes found (the user's ``home``, null when
    there is no such user; the folder's ``stat``; ``writable``); ``reported``: the problems found already."""
    from ansible_collections.amx.cluster.plugins.module_utils.inputs import (
        existing_folder_problem,
        folder_problems,
        role_folders_problem,
    )

    user, folder = settings.get("user"), settings.get("dir")
    if checkout.get("home") is None:
        return [f"the user '{user}' that should own {folder} does not exist. Create it, or set hf_examples_user."]
    home = checkout["home"]
    found = folder_problems({f"hf_examples_{k}": settings.get(k) for k in ("dir", "node_wheelhouse")}, home=home)
    cache = {"hf_examples_controller_cache": settings.get("controller_cache")}
    found += folder_problems(cache, home=controller_home, absolute=False)
    # A relative path is reported once, by settings_problems.
    found = [text for text in found if not any(problem.startswith(text) for problem in reported)]
    problems = role_folders_problem(found, "/opt/amx-cluster/transformers")
    stat = checkout.get("stat") or {}
    if not stat.get("exists") or not posixpath.isabs(str(folder)):
        return problems
    return problems + existing_folder_problem("hf_examples_dir", folder, stat, checkout.get("writable"), user, home)


def plan(
    settings: Mapping[str, Any],
    stack: Optional[Mapping[str, Any]] = None,
    freeze: Optional[str] = None,
    requirements: Optional[str] = None,
    node: Optional[Mapping[str, Any]] = None,
    checkout: Optional[Mapping[str, Any]] = None,
    controller_home: Optional[str] = None,
    downloaded: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """What the role needs to know, from what is known so far: ``problems`` (every one, empty when the role may go
    on), the ``indexes`` (and their pip ``index_args``) and the ``lock`` of the requirements; with ``checkout`` (what
    the probes found, see checkout_problems) the folders are checked too; with ``freeze`` (the virtualenv's pip
    freeze) the ``constraints`` of the install; with ``requirements`` and ``node`` (the node's marker values and C
    library) too, the ``download`` the controller makes for it; with ``downloaded`` (the wheel files of that download)
    and ``freeze``, the ``wheels_missing``: the wheels the virtualenv does not hold at their version. The values are
    left out when there are problems."""
    stack = stack or {}
    problems = settings_problems(settings, stack)
    if checkout is not None:
        problems += checkout_problems(settings, checkout, controller_home, problems)
    if problems:
        return {"problems": problems}
    lock = stack_lock(settings, stack)
    indexes = requirement_indexes(settings, stack)
    result: Dict[str, Any] = {"problems": [], "indexes": indexes, "index_args": index_args(indexes), "lock": lock}
    if checkout is not None:
        result["dir_absent"] = not (checkout.get("stat") or {}).get("exists")
    if freeze is not None:
        result["constraints"] = constraints_text(freeze, lock)
        try:
            if requirements is not None and node is not None:
                result["download"] = node_download(settings, stack, requirements, freeze, node)
            if downloaded is not None:
                result["wheels_missing"] = wheels_missing(downloaded, freeze)
        except (ExamplesError, StackProfileError) as error:
            return {"problems": [str(error)]}
    return result
