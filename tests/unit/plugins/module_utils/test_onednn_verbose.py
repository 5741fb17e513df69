# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""oneDNN's verbose lines, as several versions print them, read into which kernel did the bf16 matrix work."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.onednn_verbose import (
    amx_used,
    matmul_kernels,
    parse_line,
    run_kernels,
)

# torch 2.13.0+cpu (oneDNN v3.12.0) on this project's CI machine (AVX-512 BF16, no AMX), a bf16 nn.Linear forward
# under torch.autocast("cpu", dtype=torch.bfloat16) with ONEDNN_VERBOSE=1: the lines as printed.
TORCH_2_13_HERE = """\
onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71049cd69a3df32adcccb623b12cd7baa22)
onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
onednn_verbose,v1,info,gpu,runtime:none
onednn_verbose,v1,info,graph,backend,0:dnnl_backend
onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,prop_kind,memory_descriptors,\
attributes,auxiliary,problem_desc,exec_time
onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:ab::f0 \
wei:bf16::blocked:ba::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user attr-post-ops:sum,,8x64:64x64,0.0270996
"""

# oneDNN 3.x on an Emerald Rapids Xeon 8592+ (uxlfoundation/oneDNN issue 3868, benchdnn bf16 matmul; the issue
# wraps each line for display, joined here): AMX under its newer name, then the same run held to AVX-512 BF16.
EMR_AMX = (
    "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:bf16:a:blocked:ab::f0 "
    "wei:bf16:a:blocked:BA16a32b2a::f0 dst:bf16:a:blocked:ab::f0,,,4x14336:14336x4096,0.0820312"
)
EMR_NO_AMX = (
    "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16:a:blocked:ab::f0 "
    "wei:bf16:a:blocked:BA16a32b2a::f0 dst:bf16:a:blocked:ab::f0,,,4x14336:14336x4096,0.208008"
)

# oneDNN v3.3 (uxlfoundation/oneDNN issue 1969, Sapphire Rapids): an int8 inner product, not bf16 matrix work.
V3_3_INT8 = """\
onednn_verbose,info,oneDNN v3.3.0 (commit N/A)
onednn_verbose,info,cpu,isa:Intel AVX-512 with Intel DL Boost
onednn_verbose,primitive,exec,cpu,inner_product,brgemm:avx512_core_vnni,forward_inference,src_u8::blocked:ab::f0 \
wei_s8:a:blocked:AB4b64a4b::f0 bia_s8::blocked:a::f0 dst_u8:a:blocked:ab::f0,,,mb32ic64oc256,0.0449219
"""

# oneDNN v3.0.0 on an r7iz guest without AMX (uxlfoundation/oneDNN issue 1549): the 3.0 layout (no "primitive"
# field, types as src_f32), f32 only.
V3_0_F32 = """\
onednn_verbose,info,oneDNN v3.0.0 (commit 030eae4fe332eee75f10e05da4e8d7981c1a94b8)
onednn_verbose,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
onednn_verbose,exec,cpu,matmul,brg:avx512_core,undef,src_f32::blocked:ab:f0 wei_f32::blocked:BA16a64b:f0 \
dst_f32::blocked:ab:f0,,,1024x1024:1024x1024:1024x1024,2.64697
"""

# oneDNN v1.6 (uxlfoundation/oneDNN issue 832): dnnl_verbose, whose CPU line has commas in it, and a convolution.
V1_6 = """\
dnnl_verbose,info,oneDNN v1.6.0 (commit 8186817fa59b97c602944f4ff46ce9b5b63d217c)
dnnl_verbose,info,cpu,isa:Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions
dnnl_verbose,exec,cpu,convolution,jit:avx512_common,forward_inference,src_f32::blocked:abcd:f0 \
wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct,\
mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,0.988037
"""

# The layout torch 1.13 (oneDNN 2.6/2.7) prints for a bf16 Linear: the v3.0 line above with the recipe's kernel and
# type put in (an AMX line of that era was not at hand), behind an MPI launcher's rank prefix.
ERA_2022_AMX = (
    "[1] onednn_verbose,exec,cpu,inner_product,brgemm:avx512_core_amx,forward_training,src_bf16::blocked:ab:f0 "
    "wei_bf16::blocked:AB16b64a2b:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:ab:f0,,,mb64ic256oc256,0.0871582"
)
# The same with the oneDNN 2.x time stamp (ONEDNN_VERBOSE_TIMESTAMP=1) and the old dnnl_ prefix.
ERA_TIMESTAMP = (
    "dnnl_verbose,1669900000123.456,exec,cpu,matmul,brg:avx512_core_amx,undef,src_bf16::blocked:ab:f0 "
    "wei_bf16::blocked:BA16a64b2a:f0 dst_bf16::blocked:ab:f0,,,64x256:256x256,0.05"
)


def test_this_machines_torch_ran_avx512_bf16():
    record = matmul_kernels(TORCH_2_13_HERE)
    assert record == {
        "isa": "avx512_core_bf16",
        "impl": "brg_matmul:avx512_core_bf16",
        "amx": False,
        "impls": ["brg_matmul:avx512_core_bf16"],
        "version": "oneDNN v3.12.0",
        "cpu_isa": "Intel AVX-512 with Intel DL Boost and bfloat16 support",
        "reason": None,
    }


@pytest.mark.parametrize(
    ("lines", "isa", "amx"),
    [
        ([EMR_AMX], "avx10_1_512_amx", True),
        ([EMR_NO_AMX], "avx512_core_bf16", False),
        ([ERA_2022_AMX], "avx512_core_amx", True),
        ([ERA_TIMESTAMP], "avx512_core_amx", True),
        # One AMX run among others: AMX ran, and that is the kernel named.
        ([EMR_NO_AMX, EMR_AMX], "avx10_1_512_amx", True),
    ],
)
def test_the_kernel_of_each_oneDNN_layout(lines, isa, amx):
    record = matmul_kernels(lines)
    assert (record["isa"], record["amx"], record["reason"]) == (isa, amx, None)


@pytest.mark.parametrize(
    ("text", "version", "reason"),
    [
        (V3_3_INT8, "oneDNN v3.3.0", "oneDNN ran no bf16 matmul or inner product"),
        (V3_0_F32, "oneDNN v3.0.0", "oneDNN ran no bf16 matmul or inner product"),
        (V1_6, "oneDNN v1.6.0", "oneDNN ran no bf16 matmul or inner product"),
        ("", None, "oneDNN printed no verbose line"),
        ("Traceback (most recent call last):\nRuntimeError: x\n", None, "oneDNN printed no verbose line"),
    ],
)
def test_no_bf16_matrix_work_says_why(text, version, reason):
    record = matmul_kernels(text)
    assert record["amx"] is None and record["isa"] is None and record["impls"] == []
    assert record["version"] == version and record["reason"].startswith(reason)


def test_the_cpu_line_keeps_its_commas():
    assert parse_line(V1_6.splitlines()[1]) == {
        "kind": "info",
        "cpu_isa": "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions",
    }


def test_a_line_that_is_not_onednns_is_none():
    assert parse_line("rank 0: loss 1.2") is None
    assert parse_line(None) is None
    assert parse_line("onednn_verbose,v1,primitive,exec,cpu") is None


@pytest.mark.parametrize(
    ("nodes", "answer"),
    [
        ({"a": {"amx": True, "isa": "avx512_core_amx"}, "b": {"amx": True, "isa": "avx512_core_amx"}}, "yes"),
        ({"a": {"amx": False, "isa": "avx512_core_bf16"}}, "no (avx512_core_bf16)"),
        (
            {"a": {"amx": True, "isa": "avx512_core_amx"}, "b": {"amx": False, "isa": "avx512_core_bf16"}},
            "partly (no on b: avx512_core_bf16)",
        ),
        ({"a": {"amx": True, "isa": "avx512_core_amx"}, "b": None}, "unknown (no bf16 matmul in oneDNN's output on b)"),
        ({}, "unknown (no oneDNN record: the smoke test did not run)"),
    ],
)
def test_amx_used(nodes, answer):
    assert amx_used(nodes) == answer


def test_run_kernels_keeps_one_record_per_node_with_its_lines():
    probes = [
        {"host": "master", "rank": 0, "local_rank": 0, "onednn": TORCH_2_13_HERE.splitlines()},
        {"host": "node1", "rank": 2, "local_rank": 0, "onednn": [ERA_2022_AMX]},
        # A second line of a node (never printed: only local rank 0 probes) does not replace the first.
        {"host": "node1", "rank": 3, "local_rank": 0, "onednn": []},
    ]
    amx = run_kernels(probes, "run-7")
    assert amx["used"] == "partly (no on master: avx512_core_bf16)" and amx["measured_in"] == "run-7"
    assert amx["nodes"]["node1"]["rank"] == 2 and amx["nodes"]["node1"]["lines"] == [ERA_2022_AMX]
    assert amx["nodes"]["master"]["impl"] == "brg_matmul:avx512_core_bf16"


def test_a_failed_probe_says_so():
    amx = run_kernels([{"host": "a", "rank": 0, "onednn_error": "RuntimeError: no bf16"}])
    assert amx["used"] == "unknown (no bf16 matmul in oneDNN's output on a)"
    assert amx["nodes"]["a"]["reason"] == "the bf16 matmul failed: RuntimeError: no bf16"


def test_no_probe_no_answer():
    assert run_kernels(None) == {
        "used": "unknown (no oneDNN record: the smoke test did not run)",
        "nodes": {},
        "measured_in": None,
    }
