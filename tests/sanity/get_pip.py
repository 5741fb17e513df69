# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Offline stand-in for the pip bootstrap script that ansible-test downloads.

ansible-test runs this file (from ~/.ansible/test/cache/get_pip_<version>.py) inside each new virtual
environment with the arguments it would give get-pip: pip options, `pip==<version>`, and `--no-setuptools` /
`--no-wheel`. pip comes from the interpreter's own ensurepip, then the wanted version from the package index
through the machine's pip configuration. ensurepip runs as a separate process: in-process it points
PIP_CONFIG_FILE at /dev/null for everything that follows, and pip would lose the machine's CA bundle.
"""

import subprocess
import sys


def main() -> None:
    args = sys.argv[1:]
    drop = {"--no-setuptools": "setuptools", "--no-wheel": "wheel"}
    unwanted = [drop[a] for a in args if a in drop]
    install_args = [a for a in args if a not in drop]

    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *install_args])
    if unwanted:
        subprocess.check_call([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", *unwanted])


if __name__ == "__main__":
    main()
