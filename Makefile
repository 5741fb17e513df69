# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The two commands of the README: `make demo` and `make test`. Everything else is a part of them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

# Scenarios in the order they build on each other; slow ones run with `make molecule-slow`.
MOLECULE_SCENARIOS := default amx_check tcmalloc torch_stack hf_examples fleet
# One scenario as a check of tests/run-checks.sh: $(call molecule-check,fleet).
molecule-check = "molecule-$(1)=molecule test -s $(1)"
MOLECULE_SLOW := ipex

.PHONY: demo setup host-packages docker node-image lint sanity unit core-newest integration molecule molecule-slow bench bench-smoke test build clean

# The local demo: this machine as a one-node cluster (inventory/local.yml), provisioned, then trained on.
# Extra options go in DEMO_ARGS, e.g. DEMO_ARGS='-e train_epochs=2'.
demo: setup
	ansible-playbook playbooks/provision.yml $(DEMO_ARGS)
	ansible-playbook playbooks/train.yml $(DEMO_ARGS)

setup: $(VENV)/.installed .collections/ansible_collections/amx/cluster

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "make setup: Python 3.11 or newer is needed for the controller (found $$($(PYTHON) --version))" >&2; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt 2>&1 \
	  | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(VENV)/bin/python -m pip check >/dev/null
	@touch $@

# The checkout is the collection: link it where ansible.cfg's collections_path looks.
.collections/ansible_collections/amx/cluster:
	@mkdir -p $(@D)
	@ln -sfn ../../.. $@

host-packages:
	@bash tests/host-packages.sh

docker:
	@bash tests/cluster/docker-engine.sh

# The test nodes' image, built once before the checks that start containers (they may run at the same time).
node-image: docker
	@bash tests/cluster/node-image.sh >/dev/null

lint: setup
	ansible-lint
	yamllint --strict .
	ruff check .
	ruff format --check .

sanity: setup
	bash tests/sanity/run.sh

unit: setup
	pytest -q tests/unit

# The newest ansible-core (tests/core-newest.txt) on pyenv's Python 3.13, in a virtualenv of its own: every plugin's
# documentation, every playbook's syntax, the unit tests and the provision against the local EC2 API
# (tests/core-range.sh). The oldest line meta/runtime.yml admits is requirements-dev.txt's, which every check uses.
core-newest: setup
	bash tests/core-range.sh tests/core-newest.txt 3.13

# INTEGRATION picks a part: `make test` runs the EC2 part (against the local API) and the rest as two checks.
INTEGRATION ?= tests/integration
integration: setup host-packages node-image
	pytest -q $(INTEGRATION)

# Every scenario runs, past a failure, with its time in the summary (tests/run-checks.sh).
molecule: setup host-packages node-image
	@bash tests/run-checks.sh $(foreach s,$(MOLECULE_SCENARIOS),$(call molecule-check,$(s)))

molecule-slow: setup host-packages docker
	@set -e; for s in $(MOLECULE_SLOW); do echo "--- molecule test -s $$s"; molecule test -s $$s; done

# Benchmarks: reports with medians and ratios against a baseline measured in the same run, in bench/results/.
# The bring-up as separate machines would see it: every wheel through a local index at 25 MB/s per client, the
# controller's SSH to each node paced the same, each of the 3 nodes capped at 0.6 of this machine's CPUs
# (bench/README.md).
BRINGUP_ARGS ?= --index-rate 25MB --node-cpus 0.6
bench: setup
	@status=0; python bench/inventory_bench.py || status=$$?; \
	  python bench/bringup_bench.py $(BRINGUP_ARGS) || status=$$?; python bench/launch_bench.py || status=$$?; \
	  exit $$status

# The benchmarks at their smallest, to prove they run (results to a temporary folder, not bench/results/).
bench-smoke: setup
	@out=$$(mktemp -d) && python bench/inventory_bench.py --sizes 4 --runs 1 --out $$out && rm -rf $$out

build: setup
	bash tools/build-collection.sh .cache/dist

# Three checks at once, longest first: tests/run-checks.sh starts the next check whenever one ends, so the fleet
# scenario and the two halves of the integration suite start together and the short checks fill in behind them (one
# molecule scenario per check). Most checks are one Ansible or pytest process after another, about one core busy
# (the EC2 tests: 48% of 2 cores), so three at once keep 2 cores busy; each check runs slower, but the whole run is
# shorter (on 2 cores, one commit: 2698 s three at once, 2957 s two at once; tests/run-checks.sh prints each check's
# time). TEST_JOBS=1 runs them in turn.
TEST_JOBS ?= 3
TEST_CHECKS = $(call molecule-check,fleet) \
  "integration-nodes=$(MAKE) -s integration INTEGRATION='tests/integration --ignore=tests/integration/ec2'" \
  "integration-ec2=$(MAKE) -s integration INTEGRATION=tests/integration/ec2" $(call molecule-check,torch_stack) \
  "unit=$(MAKE) -s unit" "core-newest=$(MAKE) -s core-newest" \
  $(foreach s,$(filter-out fleet torch_stack,$(MOLECULE_SCENARIOS)),$(call molecule-check,$(s))) \
  "lint=$(MAKE) -s lint" "sanity=$(MAKE) -s sanity" "build=bash tests/build-install.sh" "bench=$(MAKE) -s bench-smoke"
test: setup host-packages node-image
	@bash tests/run-checks.sh -j $(TEST_JOBS) $(TEST_CHECKS)

clean:
	rm -rf .cache/dist tests/output
