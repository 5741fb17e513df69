# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.run_files import files_to_copy

RUN = [
    {"path": "/run/launch.sh", "checksum": "a"},
    {"path": "/run/logs/job/rank-0.log", "checksum": "b"},
    {"path": "/run/output/model.bin", "checksum": "c"},
]


@pytest.mark.parametrize(
    ("target", "skip", "expected"),
    [
        ([], "", ["launch.sh", "logs/job/rank-0.log", "output/model.bin"]),
        ([], "^output/", ["launch.sh", "logs/job/rank-0.log"]),
        # Same content under another root: nothing to copy; a changed file and a missing one travel.
        (
            [{"path": "/ctl/x/launch.sh", "checksum": "a"}, {"path": "/ctl/x/output/model.bin", "checksum": "c"}],
            "",
            ["logs/job/rank-0.log"],
        ),
        ([{"path": "/ctl/x/launch.sh", "checksum": "OLD"}], "^output/", ["launch.sh", "logs/job/rank-0.log"]),
        # Files only the target has do not matter.
        (
            [
                *[{"path": p["path"].replace("/run", "/ctl/x"), "checksum": p["checksum"]} for p in RUN],
                {"path": "/ctl/x/run.json", "checksum": "z"},
            ],
            "",
            [],
        ),
    ],
)
def test_files_to_copy(target, skip, expected):
    assert files_to_copy(RUN, "/run", target, "/ctl/x", skip=skip) == expected


def test_a_file_without_checksum_names_the_fix():
    with pytest.raises((TypeError, ValueError, KeyError), match=r"get_checksum"):
        files_to_copy([{"path": "/run/a"}], "/run", [], "/x")
