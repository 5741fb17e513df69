# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The scaling report's numbers: speed-up, efficiency, projected times, cost, and the errors on bad input."""

import json

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.scaling import (
    DEFAULT_PRICES,
    build_report,
    epoch_cost,
    format_duration,
    merge_prices,
    plot_series,
    reference_report,
    render_markdown,
)

R7IZ = "r7iz.metal-16xl"


def run(nodes, rate, steps, **extra):
    return dict({"nodes": nodes, "samples_per_second": rate, "steps": steps}, **extra)


def by_nodes(report):
    return {entry["nodes"]: entry for entry in report["runs"]}


def test_the_recipe_figures_give_86_7_percent():
    """26 min on one r7iz.metal-16xl, 7 min 30 s on four: 3.47x, 86.7%, ideal 6 min 30 s."""
    reference = reference_report()
    one, four = reference["runs"]
    assert (one["nodes"], one["speedup"], one["efficiency"]) == (1, 1.0, 1.0)
    assert four["nodes"] == 4
    assert four["speedup"] == pytest.approx(1560 / 450, abs=1e-4)
    assert four["efficiency"] == pytest.approx(26 / (4 * 7.5), abs=1e-4)
    assert f"{four['efficiency'] * 100:.1f}%" == "86.7%"
    assert four["ideal_epoch_seconds"] == 390.0  # 6 min 30 s
    assert format_duration(four["ideal_epoch_seconds"]) == "6 min 30 s"
    # Cost per epoch at the list price: 1 x 5.952 x 26/60 and 4 x 5.952 x 7.5/60.
    assert one["cost_per_epoch"] == pytest.approx(2.5792, abs=1e-4)
    assert four["cost_per_epoch"] == pytest.approx(2.976, abs=1e-4)
    # The Ice Lake comparison: 3 h 30 min on one c6i.16xlarge at 2.72 USD/h.
    (icelake,) = reference["comparison"]
    assert (icelake["instance_type"], icelake["cost_per_epoch"]) == ("c6i.16xlarge", 9.52)


def test_measured_runs_shaped_like_the_recipe_give_the_recipes_efficiency():
    """The recipe's times as measurements (87,599 samples per epoch): the same 86.7% from samples per second."""
    runs = [
        run(4, 87599 / 450, 685, epoch_seconds=450.0, samples_per_epoch=87599, instance_type=R7IZ),
        run(1, 87599 / 1560, 2738, epoch_seconds=1560.0, samples_per_epoch=87599, instance_type=R7IZ),
    ]
    report = build_report(runs, title="DistilBERT on SQuAD")
    assert [entry["nodes"] for entry in report["runs"]] == [1, 4]  # sorted by nodes
    four = by_nodes(report)[4]
    assert four["efficiency"] == pytest.approx(0.8667, abs=1e-4)
    assert four["speedup"] == pytest.approx(3.4667, abs=1e-4)
    assert four["epoch_source"] == "measured"
    assert four["ideal_samples_per_second"] == pytest.approx(4 * 87599 / 1560, abs=1e-3)
    assert report["base_nodes"] == 1
    assert report["notes"] == []


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        # nodes -> (speed-up, efficiency): perfect, sub-linear and super-linear scaling.
        ([run(1, 100.0, 10), run(2, 200.0, 5), run(4, 400.0, 3)], {1: (1.0, 1.0), 2: (2.0, 1.0), 4: (4.0, 1.0)}),
        ([run(1, 56.2, 10), run(2, 101.0, 5), run(4, 180.5, 3)], {2: (1.7972, 0.8986), 4: (3.2117, 0.8029)}),
        # The base is the smallest node count, not the first run given, and not necessarily 1.
        ([run(8, 700.0, 10), run(2, 200.0, 40)], {2: (1.0, 1.0), 8: (3.5, 0.875)}),
        ([run(2, 30.5, 20), run(3, 48.0, 14)], {3: (1.5738, 1.0492)}),
    ],
)
def test_speedup_and_efficiency(runs, expected):
    report = build_report(runs)
    rows = by_nodes(report)
    for nodes, (speedup, efficiency) in expected.items():
        assert rows[nodes]["speedup"] == pytest.approx(speedup, abs=1e-4)
        assert rows[nodes]["efficiency"] == pytest.approx(efficiency, abs=1e-4)


@pytest.mark.parametrize(
    ("extra", "seconds", "source", "epochs"),
    [
        ({"epoch_seconds": 812.5}, 812.5, "measured", 1),
        ({"epoch_seconds": 812.5, "samples_per_epoch": 87599}, 812.5, "measured", 1),  # measured wins
        ({"samples_per_epoch": 87599}, 87599 / 107.8, "projected", None),
        ({"epoch_seconds": [830.0, 810.0, 800.0]}, 813.333, "measured", 3),  # the mean of the epochs
        ({}, None, None, None),
    ],
)
def test_time_per_epoch_measured_or_projected(extra, seconds, source, epochs):
    report = build_report([run(1, 56.0, 2738, epoch_seconds=1560.0), run(2, 107.8, 1369, **extra)])
    two = by_nodes(report)[2]
    assert two["epoch_source"] == source
    assert two["epochs_measured"] == epochs
    if seconds is None:
        assert two["epoch_seconds"] is None
        assert any("2 node(s): no time per epoch" in note for note in report["notes"])
    else:
        assert two["epoch_seconds"] == pytest.approx(seconds, abs=1e-3)
    assert two["ideal_epoch_seconds"] == 780.0
    assert any("projected" in note for note in report["notes"]) == (source == "projected")


@pytest.mark.parametrize(
    ("instance_type", "prices", "cost", "note"),
    [
        (R7IZ, None, 2 * 5.952 * 800 / 3600, None),
        ("c6i.16xlarge", None, 2 * 2.72 * 800 / 3600, None),
        ("m8i.48xlarge", None, 2 * 10.16064 * 800 / 3600, None),
        (R7IZ, {R7IZ: 4.2}, 2 * 4.2 * 800 / 3600, None),  # an override wins over the default
        ("x9z.huge", {"x9z.huge": 1.5}, 2 * 1.5 * 800 / 3600, None),  # and adds a type
        ("x9z.huge", None, None, "no price for x9z.huge: add it to prices"),
        (None, None, None, "no instance type given"),
    ],
)
def test_cost_per_epoch(instance_type, prices, cost, note):
    report = build_report(
        [
            run(1, 50.0, 100, epoch_seconds=1600.0, instance_type=instance_type),
            run(2, 100.0, 50, epoch_seconds=800.0, instance_type=instance_type),
        ],
        prices=prices,
    )
    two = by_nodes(report)[2]
    assert two["cost_note"] == note
    if cost is None:
        assert two["cost_per_epoch"] is None
        assert any(note in line for line in report["notes"])
    else:
        assert two["cost_per_epoch"] == pytest.approx(cost, abs=1e-4)
        assert report["prices"][instance_type] == (prices or DEFAULT_PRICES)[instance_type]


def test_cost_needs_a_time():
    assert epoch_cost(4, R7IZ, None, DEFAULT_PRICES)["cost_per_epoch"] is None
    assert epoch_cost(4, R7IZ, 450.0, DEFAULT_PRICES)["cost_per_epoch"] == pytest.approx(2.976)


def test_the_price_table_covers_the_recipes_instance_types():
    assert set(DEFAULT_PRICES) == {
        "r7iz.metal-16xl",
        "r7iz.16xlarge",
        "m7i.48xlarge",
        "c7i.48xlarge",
        "m8i.48xlarge",
        "c6i.16xlarge",
    }
    assert all(price > 0 for price in DEFAULT_PRICES.values())
    assert merge_prices({"c6i.16xlarge": 3})["c6i.16xlarge"] == 3.0
    assert merge_prices()["r7iz.metal-16xl"] == 5.952


@pytest.mark.parametrize(
    ("runs", "prices", "message"),
    [
        ([], None, "runs is empty"),
        ("nodes=1", None, "runs must be a list of measurements, got str"),
        ([run(1, 50.0, 10), run(1, 52.0, 10)], None, "runs[0] and runs[1] both have nodes=1"),
        ([run(1, 50.0, 10), run(2, 0.0, 10)], None, "runs[1] (nodes=2): samples_per_second must be a number greater"),
        ([run(1, -3.0, 10)], None, "samples_per_second must be a number greater than 0, got -3.0"),
        ([run(1, float("nan"), 10)], None, "samples_per_second must be a number greater than 0, got nan"),
        ([run(1, "fast", 10)], None, "samples_per_second must be a number greater than 0, got 'fast'"),
        ([run(0, 50.0, 10)], None, "runs[0] (nodes=0): nodes must be a whole number of at least 1, got 0"),
        ([run(True, 50.0, 10)], None, "nodes must be a whole number of at least 1, got True"),
        ([run(1.5, 50.0, 10)], None, "nodes must be a whole number of at least 1, got 1.5"),
        ([run(1, 50.0, 0)], None, "steps must be a whole number of at least 1, got 0"),
        ([{"nodes": 2, "steps": 5}], None, "runs[0] (nodes=2): missing samples_per_second"),
        ([{"samples_per_second": 5.0}], None, "runs[0]: missing nodes, steps"),
        ([run(1, 50.0, 10, epoch_seconds=0)], None, "epoch_seconds must be a number greater than 0, got 0"),
        ([run(1, 50.0, 10, epoch_seconds=[])], None, "epoch_seconds is an empty list"),
        ([run(1, 50.0, 10, epoch_seconds=[10.0, -1])], None, "each of epoch_seconds must be a number greater"),
        ([run(1, 50.0, 10, samples_per_epoch=0)], None, "samples_per_epoch must be a whole number of at least 1"),
        ([run(1, 50.0, 10, instance_type="")], None, "instance_type must be a non-empty string or null"),
        ([run(1, 50.0, 10, epoch_second=3.0)], None, "unknown field(s) epoch_second"),
        (["nodes=1"], None, "runs[0] must be a mapping"),
        ([run(1, 50.0, 10)], {R7IZ: 0}, "prices: the price of r7iz.metal-16xl must be a number greater than 0"),
        ([run(1, 50.0, 10)], {R7IZ: "cheap"}, "got 'cheap'"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(runs, prices, message):
    with pytest.raises(ValueError) as error:
        build_report(runs, prices=prices)
    assert message in str(error.value)


def test_notes_tell_what_to_doubt():
    report = build_report(
        [
            run(1, 50.0, 100, samples_per_epoch=1000, instance_type=R7IZ, epoch_seconds=[20.0, 21.0]),
            run(2, 90.0, 50, samples_per_epoch=1200, instance_type="m7i.48xlarge"),
        ]
    )
    notes = "\n".join(report["notes"])
    assert "1 node(s): the time per epoch is the mean of 2." in notes
    assert "different samples per epoch (1000, 1200)" in notes
    assert "different instance types (m7i.48xlarge, r7iz.metal-16xl)" in notes
    assert "Only one node count" in build_report([run(1, 50.0, 100)])["notes"][0]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1560, "26 min"),
        (450, "7 min 30 s"),
        (390, "6 min 30 s"),
        (12600, "3 h 30 min"),
        (3723.4, "1 h 2 min 3 s"),
        (9.6, "10 s"),
        (0.2, "0 s"),
        (None, "-"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_the_report_says_whether_amx_did_the_bf16_work():
    amx = {
        "used": "no (avx512_core_bf16)",
        "nodes": {"b": {"impl": "brg_matmul:avx512_core_bf16"}, "a": {"impl": "brg_matmul:avx512_core_bf16"}},
        "measured_in": "run-1",
    }
    report = build_report([run(1, 56.15, 2738)], amx=amx)
    assert report["amx"] == amx
    assert (
        "AMX used: no (avx512_core_bf16) (a: brg_matmul:avx512_core_bf16; b: brg_matmul:avx512_core_bf16, measured by "
        "the smoke test of run run-1)." in render_markdown(report).splitlines()
    )
    assert "AMX used" not in render_markdown(build_report([run(1, 56.15, 2738)]))
    with pytest.raises(ValueError, match="amx must be the run record's amx mapping"):
        build_report([run(1, 56.15, 2738)], amx="yes")


def test_markdown_shows_runs_reference_notes_and_prices():
    report = build_report(
        [
            run(1, 56.15, 2738, epoch_seconds=1560.0, instance_type=R7IZ, label="squad-1n"),
            run(4, 194.7, 685, samples_per_epoch=87599, instance_type=R7IZ, label="squad-4n"),
        ],
        title="DistilBERT on SQuAD, r7iz.metal-16xl",
    )
    text = render_markdown(report)
    lines = text.splitlines()
    assert lines[0] == "# DistilBERT on SQuAD, r7iz.metal-16xl"
    assert "| 1 | squad-1n | r7iz.metal-16xl | 2738 | 56.1 | 56.1 | 26 min | 26 min | 1.00x | 100.0% | $2.58 |" in lines
    assert (
        "| 4 | squad-4n | r7iz.metal-16xl | 685 | 194.7 | 224.6 | 7 min 30 s (projected) | 6 min 30 s | 3.47x | 86.7% "
        "| $2.98 |" in lines
    )
    assert "## Reference: the original recipe (DistilBERT on SQuAD, 1 epoch, bf16)" in lines
    assert "| 4 | r7iz.metal-16xl | 7 min 30 s | 6 min 30 s | 3.47x | 86.7% | $2.98 |" in lines
    assert "| 1 | c6i.16xlarge (no AMX) | 3 h 30 min | - | - | - | $9.52 |" in lines
    assert (
        "- 4 node(s): the time per epoch is projected (samples_per_epoch / samples_per_second), not measured." in lines
    )
    assert "| r7iz.metal-16xl | 5.9520 |" in lines
    assert "| c6i.16xlarge | 2.7200 |" in lines
    assert "check the current ones" in text
    # Every table row has as many cells as its header.
    for block in text.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("| ")]
        assert len({line.count(" | ") for line in rows}) <= 1, block


def test_plot_series_and_json_round_trip():
    report = build_report([run(2, 30.5, 20, epoch_seconds=12.2), run(3, 41.0, 14, samples_per_epoch=400)])
    series = plot_series(report)
    assert series["nodes"] == [2, 3]
    assert series["ideal_samples_per_second"] == [30.5, 45.75]
    assert series["efficiency_percent"] == [100.0, 89.62]
    assert series["reference_nodes"] == [1, 4]
    assert series["reference_efficiency_percent"] == [100.0, 86.67]
    assert series["ticks"] == [1, 2, 3, 4]
    assert series["epoch_labels"] == ["12 s / epoch", "10 s / epoch\n(projected)"]
    assert json.loads(json.dumps(report)) == report  # plain JSON types only
