# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# One IPEX bf16 training step, as the recipe's --use_ipex --bf16 run does per step. Prints one JSON line.
# ipex.optimize(dtype=bfloat16) prepacks weights only on CPUs with avx512bw/vl/dq or avx_ne_convert; elsewhere
# (this CI machine) it refuses unless weights_prepack=False, so the step asks oneDNN what the CPU can do.
import importlib
import json
import time

start = time.time()
ipex = importlib.import_module("intel_extension_for_pytorch")
torch = importlib.import_module("torch")
imported = time.time()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()
prepack = bool(ipex._C.onednn_has_bf16_support())
model, optimizer = ipex.optimize(model, optimizer=optimizer, dtype=torch.bfloat16, weights_prepack=prepack)
inputs = torch.randn(32, 64)
labels = torch.randint(0, 2, (32,))
before = [param.detach().float().clone() for param in model.parameters()]
with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits.float(), labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
moved = any(not torch.equal(old, param.detach().float()) for old, param in zip(before, model.parameters()))
print(
    json.dumps(
        {
            "torch": torch.__version__,
            "ipex": ipex.__version__,
            "weights_prepack": prepack,
            "logits_dtype": str(logits.dtype),
            "loss": float(loss),
            "weights_moved": moved,
            "import_seconds": round(imported - start, 1),
            "step_seconds": round(time.time() - imported, 2),
        }
    )
)
