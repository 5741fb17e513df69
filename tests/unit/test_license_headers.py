# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One license everywhere: GPL-3.0-or-later, as galaxy.yml and COPYING say.

Every source file of the checkout (tracked, and new files git does not ignore, so a file not yet committed is
checked too; a plain walk of the tree when there is no git) has the SPDX line in the comments it starts with,
after its shebang or cloud-config line if it has one. The project's header is these three lines:

    # Copyright: contributors to amx.cluster
    # GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
    # SPDX-License-Identifier: GPL-3.0-or-later

Every source file starts with the same three lines (a copyright or license line of another form, or
another license's name in the header, fails). Jinja templates carry the lines as Jinja comments, ``{# ... #}``,
which render to nothing. Source files: *.py, *.sh, *.j2, Makefile, and any text file that starts with a shebang.
Every role's meta/main.yml says ``license: GPL-3.0-or-later``; YAML files carry no header.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
LICENSE = "GPL-3.0-or-later"
HEADER = (
    "Copyright: contributors to amx.cluster",
    "GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)",
    f"SPDX-License-Identifier: {LICENSE}",
)
SOURCE_SUFFIXES = (".py", ".sh", ".j2")
SOURCE_NAMES = ("Makefile",)
# Lines that must stay first in their file; the header follows them.
FIRST_LINES = re.compile(r"#!|#cloud-config\b")
OTHER_LICENSE = re.compile(r"\bapache\b|\bMIT\b|\bBSD\b|\bLGPL|\bMPL\b|\bISC\b|GPL-2\.0|GPLv2", re.IGNORECASE)
# Everything a walk without git skips: git's own folder and the .gitignore entries that name folders.
ALWAYS_SKIPPED = (".git",)


def _walk(root: pathlib.Path) -> list[str]:
    ignored = set(ALWAYS_SKIPPED)
    gitignore = root / ".gitignore"
    if gitignore.is_file():
        for line in gitignore.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line.endswith("/") and not line.startswith("#"):
                ignored.add(line.strip("/"))
    found = []
    for folder, dirs, files in os.walk(root):
        rel = pathlib.Path(folder).relative_to(root)
        dirs[:] = sorted(d for d in dirs if d not in ignored and (rel / d).as_posix() not in ignored)
        found.extend((rel / name).as_posix() for name in sorted(files))
    return found


def checkout_files(root: pathlib.Path) -> list[str]:
    """Tracked files that exist, plus new files git does not ignore; every file but ignored folders without git."""
    git = shutil.which("git")
    if git is not None:
        run = subprocess.run(
            [git, "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
        )
        if run.returncode == 0 and pathlib.Path(run.stdout.strip()).resolve() == root.resolve():
            listing = subprocess.run(
                [git, "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True,
                check=True,
            ).stdout.decode("utf-8")
            return sorted({name for name in listing.split("\0") if name and (root / name).is_file()})
    return _walk(root)


def _lines(path: pathlib.Path) -> list[str] | None:
    """The file's lines, or None for a binary file."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def is_source(root: pathlib.Path, name: str) -> bool:
    path = root / name
    if path.suffix in SOURCE_SUFFIXES or path.name in SOURCE_NAMES:
        return True
    if path.suffix in (".yml", ".yaml", ".md", ".txt", ".json", ".toml", ".cfg", ".rst", ".ini", ".xml"):
        return False
    with path.open("rb") as stream:
        return stream.read(2) == b"#!"


def _comment(line: str, template: bool) -> str | None:
    """The text of a header comment line, or None when the line is not a comment."""
    if template:
        match = re.fullmatch(r"\{#-?\s?(.*?)\s?-?#\}", line)
        return match.group(1) if match else None
    if line.startswith("#"):
        return line[1:].strip()
    return None


def header_problems(root: pathlib.Path, name: str) -> list[str]:
    """What is wrong with the license header of one source file (nothing: an empty list)."""
    lines = _lines(root / name)
    if lines is None:
        return ["is binary, but its name makes it a source file"]
    template = name.endswith(".j2")
    start = 1 if lines and FIRST_LINES.match(lines[0]) else 0
    # The header: the leading comment lines after the first line that must stay first.
    header = []
    for line in lines[start:]:
        text = _comment(line, template)
        if text is None:
            break
        header.append(text)
    problems = []
    spdx = [text for text in header if text.startswith("SPDX-License-Identifier:")]
    if not spdx:
        problems.append(f"has no SPDX line ({'{# ' + HEADER[2] + ' #}' if template else '# ' + HEADER[2]})")
    elif any(text != HEADER[2] for text in spdx):
        problems.append(f"names another license: {spdx[0]!r}")
    for text in header:
        if text.startswith("Copyright") and text != HEADER[0]:
            problems.append(f"has a copyright line of another form: {text!r}, the project's is {HEADER[0]!r}")
        if "General Public License" in text and text != HEADER[1]:
            problems.append(f"has a license line of another form: {text!r}, the project's is {HEADER[1]!r}")
    words: dict[str, str] = {}
    for text in header:
        for match in OTHER_LICENSE.finditer(text):
            words.setdefault(match.group(0).lower(), match.group(0))
    if words:
        problems.append(f"names another license in its header: {', '.join(sorted(words.values()))}")
    if not problems and header[: len(HEADER)] != list(HEADER):
        # One form everywhere; ansible-test's validate-modules also wants the GPL line in every module.
        problems.append(f"does not start with the project's header lines {list(HEADER)}")
    return problems


def role_meta_problems(root: pathlib.Path, name: str) -> list[str]:
    meta = yaml.safe_load((root / name).read_text(encoding="utf-8")) or {}
    found = (meta.get("galaxy_info") or {}).get("license")
    if found == LICENSE or found == [LICENSE]:
        return []
    return [f"says license: {found!r}, the collection is {LICENSE}"]


def collection_problems(root: pathlib.Path) -> list[str]:
    problems = []
    galaxy = yaml.safe_load((root / "galaxy.yml").read_text(encoding="utf-8"))
    if galaxy.get("license") != [LICENSE] or "license_file" in galaxy:
        problems.append(f"galaxy.yml: license is {galaxy.get('license')!r}, expected [{LICENSE}]")
    copying = root / "COPYING"
    if not copying.is_file() or "GNU GENERAL PUBLIC LICENSE" not in copying.read_text(encoding="utf-8")[:200]:
        problems.append("COPYING: is not the GNU General Public License")
    return problems


def license_problems(root: pathlib.Path) -> list[str]:
    problems = []
    for name in checkout_files(root):
        if re.fullmatch(r"roles/[^/]+/meta/main\.ya?ml", name):
            problems.extend(f"{name}: {problem}" for problem in role_meta_problems(root, name))
        elif is_source(root, name):
            problems.extend(f"{name}: {problem}" for problem in header_problems(root, name))
    return problems


def test_every_source_file_and_role_is_gpl():
    problems = collection_problems(ROOT) + license_problems(ROOT)
    assert not problems, "\n".join(problems)


def test_the_checkout_listing_finds_the_sources():
    # A listing that silently came back empty would make the test above pass on anything.
    names = checkout_files(ROOT)
    assert "plugins/modules/cpu_facts.py" in names
    assert "roles/train/meta/main.yml" in names
    assert ".ci/run" in names and is_source(ROOT, ".ci/run")
    assert not any(name.startswith((".venv/", ".git/")) for name in names)


GOOD_PY = "#!/usr/bin/python\n# " + "\n# ".join(HEADER) + '\n"""Doc."""\n'
GOOD_J2 = "#cloud-config\n" + "".join("{# " + line + " #}\n" for line in HEADER) + "a: 1\n"
GOOD_META = f"---\ngalaxy_info:\n  license: {LICENSE}\n"


def _tree(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('"""Doc."""\n', "has no SPDX line"),
        ("# Copyright: amx.cluster contributors\n# Apache License 2.0 (see LICENSE)\nx = 1\n", "has no SPDX line"),
        ("# SPDX-License-Identifier: Apache-2.0\n", "names another license: "),
        (
            "# Copyright: amx.cluster contributors\n# SPDX-License-Identifier: GPL-3.0-or-later\n",
            "has a copyright line",
        ),
        (GOOD_PY.replace("(see COPYING or ", "(see "), "has a license line of another form"),
        (GOOD_PY.replace("(see COPYING", "(MIT, see COPYING"), "names another license in its header: MIT"),
        ('"""Doc."""\n# ' + "\n# ".join(HEADER) + "\n", "has no SPDX line"),
        (f"#!/bin/sh\n# SPDX-License-Identifier: {LICENSE}\necho\n", "does not start with the project's header lines"),
    ],
)
def test_a_bad_header_is_named(tmp_path, text, wanted):
    _tree(tmp_path, {"plugins/x.py": text})
    problems = license_problems(tmp_path)
    assert any(problem.startswith(f"plugins/x.py: {wanted}") for problem in problems), problems


def test_good_headers_and_metas_pass(tmp_path):
    _tree(
        tmp_path,
        {
            "plugins/modules/m.py": GOOD_PY,
            "roles/r/templates/t.yml.j2": GOOD_J2,
            "roles/r/meta/main.yml": GOOD_META,
            "roles/r/tasks/main.yml": "---\n- name: No header in YAML\n",
            "data.png": "\x89PNG",
        },
    )
    assert license_problems(tmp_path) == []


def test_shell_without_extension_templates_and_metas_are_checked(tmp_path):
    _tree(
        tmp_path,
        {
            ".ci/run": "#!/usr/bin/env bash\nmake test\n",
            "Makefile": "all:\n",
            "roles/r/templates/hosts.j2": "# " + "\n# ".join(HEADER) + "\nlocalhost\n",
            "roles/r/meta/main.yml": GOOD_META.replace(LICENSE, "Apache-2.0"),
        },
    )
    problems = license_problems(tmp_path)
    for name in (".ci/run", "Makefile", "roles/r/templates/hosts.j2"):
        assert any(problem.startswith(f"{name}: has no SPDX line") for problem in problems), problems
    assert "roles/r/meta/main.yml: says license: 'Apache-2.0', the collection is GPL-3.0-or-later" in problems


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_new_files_count_and_ignored_ones_do_not(tmp_path):
    _tree(tmp_path, {".gitignore": "build/\n", "kept.py": GOOD_PY.replace("#!/usr/bin/python\n", "")})
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    _tree(tmp_path, {"new.sh": "#!/bin/sh\n", "build/made.py": "x = 1\n"})
    assert checkout_files(tmp_path) == [".gitignore", "kept.py", "new.sh"]
    assert license_problems(tmp_path) == ["new.sh: has no SPDX line (# SPDX-License-Identifier: GPL-3.0-or-later)"]


def test_without_git_the_tree_is_walked(tmp_path):
    # tmp_path is no git checkout: the listing walks it, skipping the folders .gitignore names.
    _tree(tmp_path, {".gitignore": ".venv/\ntests/output/\n", "a.py": "x = 1\n"})
    _tree(tmp_path, {".venv/lib/b.py": "x = 1\n", "tests/output/c.py": "x = 1\n", "tests/d.py": "x = 1\n"})
    assert checkout_files(tmp_path) == [".gitignore", "a.py", "tests/d.py"]
