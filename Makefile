# Contact Lab developer commands. The README shows two: `make demo` and `make test`.
#
#   make setup        .venv: Python 3.11 + bpy 5.0.1 + numba + pytest + ruff + test peers + this repo (editable)
#   make test         ruff check + ruff format --check; pyright over the bpy code against Blender 4.2 and 5.0
#                     stubs; pytest tests/core; tests/addon (mocked bpy) and
#                     tests/test_packaging.py; pytest tests/blender on bpy 5.0 (.venv), 4.2 LTS
#                     (.venv-blender42) and 5.2 (.venv-blender52, skipped with a notice without Python 3.13)
#   make typecheck    the pyright step alone (its first run installs pyright into .venv, the stubs into .typecheck/)
#   make demo         build, bake and render the demo scenes into out/ (git ignores it: the checkout stays clean)
#   make pictures     make demo, then copy its contact sheets into docs/ (the pictures the README shows)
#   make bench        every tests/benchmarks/bench_*.py (keyframe writing, rigid solvers vs pybullet)
#   make solver-study every contact method on the same scenes and FCLIB problems: docs/solver-study-results.md
#   make golden       bake the five demos again and compare with tests/golden/demo_hashes.json (bit for bit)
#   make golden-record  bake them and store their fingerprints anew (after a change meant to move a demo)
#   make validate     validate blender_manifest.toml with Blender's own blender_ext.py
#   make build        download numba/llvmlite wheels (~300 MB) and build per-platform zips into dist/
#   make clean        remove build outputs and caches (keeps the virtual environments)
#   make distclean    clean + remove all virtual environments, downloaded wheels and type stubs
#
# Only Python 3.11 (and optionally 3.13), gcc and pip (PyPI) are needed; everything else is installed here.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

# ---- versions -------------------------------------------------------------------------------
BPY_VERSION      := 5.0.1
BPY42_SPEC       := bpy>=4.2,<4.3
BPY52_SPEC       := bpy>=5.2,<5.3
NUMBA_VERSION    := 0.68.1
LLVMLITE_VERSION := 0.50.0
PYTEST_SPEC      := pytest>=8,<10
RUFF_SPEC        := ruff==0.17.6
# test-only: reads the FCLIB reference problem (shared/data/fclib)
H5PY_SPEC        := h5py>=3.10
# test-only: the Flexible Collision Library and trimesh, references for the rigid shapes' contacts and mass properties
FCL_SPEC         := python-fcl==0.7.0.11
TRIMESH_SPEC     := trimesh==5.2.0
# test-only: the IPC Toolkit, reference for the IPC distances, barrier and CCD (tests/core/ipc/test_*.py)
IPCTK_SPEC       := ipctk==1.6.1
# test-only in every Blender tier: Dask's scheduler and workers for the farm bake (tests/blender/test_batch.py);
# optional for users (`--scheduler`). Pure Python; its compiled dependencies ship cp311 and cp313 wheels.
DISTRIBUTED_SPEC := distributed==2026.8.0

# ---- environments ---------------------------------------------------------------------------
VENV    := .venv
VENV42  := .venv-blender42
VENV52  := .venv-blender52
PY      := $(VENV)/bin/python
PY42    := $(VENV42)/bin/python
PY52    := $(VENV52)/bin/python
STAMP   := $(VENV)/.contact_lab-setup
STAMP42 := $(VENV42)/.contact_lab-setup
STAMP52 := $(VENV52)/.contact_lab-setup
# Numba kernel cache: one directory per fingerprint of the core sources, because numba only notices
# changes to a kernel's own file (a kernel inlining a changed helper from another file stays stale).
CORE_FINGERPRINT := $(shell find core -name '*.py' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache/$(CORE_FINGERPRINT)
PIP_INSTALL = -m pip install --disable-pip-version-check --progress-bar off -q
# The editable installs of this repository write its build metadata into the source tree: one at a time when the
# test lanes set up their environments in parallel (`make test`).
SERIAL := $(if $(shell command -v flock),flock $(CURDIR)/.setup.lock,)
# OpenBLAS picks its kernels by CPU (numpy's 3×3 matrix products go through it), and kernels of different CPU
# generations round differently in the last bit: pin one that every x86-64 CPU with AVX2 runs, so the bit-for-bit
# reference checks (tests/data/rigid_reference.npz, tests/golden) hold on any test machine.
export OPENBLAS_CORETYPE ?= Haswell
# One OpenBLAS thread per process: the two test lanes share the cores, and a BLAS call waits for its slowest thread
# (beside a busy core the dense solvers' tests ran 3.3x slower with two threads: 147 s against 44 s). Least-squares
# results also round differently with the thread count, and tests/data/fclib/outcomes.json records one thread's.
export OPENBLAS_NUM_THREADS ?= 1

# Prints the absolute path of a Python interpreter of version $(1) (e.g. 3.11) that can create venvs, or nothing.
# Tries pythonX.Y, python3, the pyenv shim with PYENV_VERSION set, then ~/.pyenv/versions/X.Y.*.
define find_python
for cand in "python$(1)" "python3" \
            "env PYENV_VERSION=$$(ls -d $$HOME/.pyenv/versions/$(1).* 2>/dev/null | sort -V | tail -n1 | xargs -r basename) python$(1)" \
            $$(ls -d $$HOME/.pyenv/versions/$(1).*/bin/python$(1) 2>/dev/null | sort -rV); do \
  exe=$$($$cand -c 'import sys, venv, ensurepip; assert sys.version_info[:2] == tuple(map(int, "$(1)".split("."))); print(sys.executable)' 2>/dev/null) \
    && [ -n "$$exe" ] && { echo "$$exe"; break; }; \
done; true
endef

# Canned recipe lines. new_venv311: create the venv $(1) with a Python 3.11 (what needs it: $(2)) unless it exists.
define new_venv311
@py=$$($(call find_python,3.11)); \
if [ -z "$$py" ]; then echo "ERROR: Python 3.11 not found (needed for $(2))" >&2; exit 1; fi; \
if [ ! -x $(1)/bin/python ]; then echo ">> creating $(1) with $$py"; "$$py" -m venv $(1); fi
endef

# install_self: this repository, editable, into the venv of interpreter $(1); then the target's stamp.
define install_self
$(SERIAL) $(1) $(PIP_INSTALL) -e . --no-deps
@touch $@
endef

.PHONY: help setup setup-blender42 setup-blender52 test lint typecheck test-core test-blender test-blender42 \
        test-blender52 test-addon demo pictures golden golden-record bench solver-study validate wheels build clean distclean

# The command list at the top of this file, down to its first bare "#" line.
help:
	@sed -n '2,/^#$$/p' Makefile | sed -e '$$d' -e 's/^# \{0,1\}//'

# ---- setup ----------------------------------------------------------------------------------
setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(call new_venv311,$(VENV),bpy $(BPY_VERSION))
	@echo ">> installing bpy==$(BPY_VERSION) numba==$(NUMBA_VERSION) pytest ruff into $(VENV)"
	$(PY) $(PIP_INSTALL) "bpy==$(BPY_VERSION)" "numba==$(NUMBA_VERSION)" "llvmlite==$(LLVMLITE_VERSION)" \
	    "$(PYTEST_SPEC)" "$(RUFF_SPEC)" "$(H5PY_SPEC)" "$(IPCTK_SPEC)" \
	    "$(FCL_SPEC)" "$(TRIMESH_SPEC)" "$(DISTRIBUTED_SPEC)"
	$(call install_self,$(PY))

# Blender 4.2 LTS: Python 3.11 like Blender 4.2 itself, numpy 1.x like Blender 4.2 ships.
setup-blender42: $(STAMP42)

$(STAMP42): pyproject.toml Makefile
	$(call new_venv311,$(VENV42),bpy 4.2)
	@echo ">> installing $(BPY42_SPEC) numba pytest into $(VENV42)"
	$(PY42) $(PIP_INSTALL) "$(BPY42_SPEC)" "numpy>=1.26,<2" "numba==$(NUMBA_VERSION)" \
	    "llvmlite==$(LLVMLITE_VERSION)" "$(PYTEST_SPEC)" "$(DISTRIBUTED_SPEC)"
	$(call install_self,$(PY42))

# Blender 5.2: Python 3.13, numpy 2. Skipped with a notice when no Python 3.13 is available.
setup-blender52:
	@py=$$($(call find_python,3.13)); \
	if [ -z "$$py" ]; then \
	  echo "NOTICE: no Python 3.13 found (python3.13, pyenv 3.13.x): skipping the Blender 5.2 tier"; exit 0; fi; \
	$(MAKE) $(STAMP52) PY313="$$py"

$(STAMP52): pyproject.toml Makefile
	@if [ ! -x $(PY52) ]; then echo ">> creating $(VENV52) with $(PY313)"; "$(PY313)" -m venv $(VENV52); fi
	@echo ">> installing $(BPY52_SPEC) numba pytest into $(VENV52)"
	$(PY52) $(PIP_INSTALL) "$(BPY52_SPEC)" "numba==$(NUMBA_VERSION)" "llvmlite==$(LLVMLITE_VERSION)" \
	    "$(PYTEST_SPEC)" "$(DISTRIBUTED_SPEC)"
	$(call install_self,$(PY52))

# ---- tests ----------------------------------------------------------------------------------
# `make test` runs every step even after a failure, prints a summary and fails if any step failed.
# It runs two lanes at once, each step after the other within its lane: the machine has two cores and
# every step is essentially one process. Lane 1 carries the core tier's cold compile: lint, the core tier, then
# Blender 4.2 (its environment set up by lane 2 meanwhile). Lane 2: Blender 4.2's environment, the Blender 5.2 tier
# (Python 3.13: a kernel cache of its own), the mocked-bpy and packaging tier, the type check, then Blender 5.0
# (whose zip-install, fuzz and warm-up tests make it the longest tier; the later it starts, the more of the core
# tier's kernels it finds compiled). The Python 3.11 steps share one kernel cache (numba writes it atomically).
# Each line is prefixed with its lane; the summary at the end lists every step. `after:STEP` waits until the other
# lane has run STEP (lane 1's lint sets up .venv, which the 5.0 tier and the type check use: one pip at a time in it).
# Each lane gets half the cores for numba's parallel loops (NUMBA_NUM_THREADS, unless already set): a parallel loop
# waits for its slowest thread, and with both lanes running loops on every core a descheduled thread costs a
# scheduler slice per loop (the soft engine's tests ran over ten times slower beside the other lane).
LANE1 := lint test-core after:setup-blender42 test-blender42
LANE2 := setup-blender42 test-blender52 after:lint test-addon typecheck test-blender
TEST_STEPS := $(filter-out after:%,$(LANE1) $(LANE2))

test:
	@results=$$(mktemp -d); \
	if [ -z "$${NUMBA_NUM_THREADS:-}" ]; then \
	  threads=$$(( $$(nproc 2>/dev/null || echo 2) / 2 )); export NUMBA_NUM_THREADS=$$(( threads > 0 ? threads : 1 )); \
	fi; \
	echo "make test: two lanes, NUMBA_NUM_THREADS=$$NUMBA_NUM_THREADS each"; \
	lane() { \
	  name=$$1; shift; lane_start=$$SECONDS; \
	  for step in "$$@"; do \
	    if [ "$${step#after:}" != "$$step" ]; then \
	      while [ ! -e "$$results/done-$${step#after:}" ]; do sleep 1; done; continue; \
	    fi; \
	    echo "[$$name] ======== make $$step ========"; \
	    start=$$SECONDS; \
	    if $(MAKE) $$step 2>&1 | sed -u "s/^/[$$name] /"; then res=ok; else res=FAILED; fi; \
	    echo "$$step: $$res ($$((SECONDS - start)) s)" >> "$$results/$$name"; \
	    touch "$$results/done-$$step"; \
	    echo "[$$name] >> $$step: $$res ($$((SECONDS - start)) s)"; \
	  done; \
	  echo "lane $$name: $$((SECONDS - lane_start)) s" >> "$$results/$$name"; \
	}; \
	lane 2 $(LANE2) & \
	lane 1 $(LANE1); \
	wait; \
	echo; cat "$$results"/1 "$$results"/2; \
	failed=$$( (grep -h ': FAILED' "$$results"/1 "$$results"/2 || true) | cut -d: -f1 | tr '\n' ' '); \
	rm -rf "$$results"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED: $$failed"; exit 1; fi; \
	echo "make test: all steps passed"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# pyright over the code that imports bpy, once per Blender API: fake-bpy-module's stubs for 4.2 LTS and for 5.0 lie
# side by side in .typecheck/bpy-<version>/ (both provide `bpy`, so they cannot share a folder). Each run puts one
# folder on PYTHONPATH of the interpreter pyright asks for its search paths (.venv, which also brings numpy and
# numba), ahead of site-packages and so ahead of the real bpy. Settings: [tool.pyright] in pyproject.toml.
# pyright[nodejs] brings node from PyPI; the pyright wheel bundles the checker itself, so nothing else is fetched.
PYRIGHT_SPEC       := pyright[nodejs]==1.1.414
FAKE_BPY_4.2       := fake-bpy-module-4-2==20260730
FAKE_BPY_5.0       := fake-bpy-module-5-0==20260730
TYPECHECK_BLENDERS := 4.2 5.0
TYPECHECK_DIR      := .typecheck

$(VENV)/.contact_lab-typecheck: $(STAMP)
	$(PY) $(PIP_INSTALL) "$(PYRIGHT_SPEC)"
	@touch $@

$(TYPECHECK_DIR)/bpy-%/.stamp: Makefile | $(STAMP)
	rm -rf $(@D)
	$(PY) $(PIP_INSTALL) --no-deps --target $(@D) "$(FAKE_BPY_$*)"
	@touch $@

# PYRIGHT_PYTHON_IGNORE_WARNINGS: no look-up of the newest pyright on PyPI at every run.
typecheck: setup $(VENV)/.contact_lab-typecheck $(TYPECHECK_BLENDERS:%=$(TYPECHECK_DIR)/bpy-%/.stamp)
	@failed=(); \
	for v in $(TYPECHECK_BLENDERS); do \
	  echo ">> pyright, Blender $$v API ($(TYPECHECK_DIR)/bpy-$$v)"; \
	  PYTHONPATH="$(CURDIR)/$(TYPECHECK_DIR)/bpy-$$v" PYRIGHT_PYTHON_IGNORE_WARNINGS=1 \
	    $(VENV)/bin/pyright --pythonpath $(PY) || failed+=("$$v"); \
	done; \
	if [ $${#failed[@]} -ne 0 ]; then echo "typecheck: errors against Blender $${failed[*]}"; exit 1; fi

# Every tier prints its slowest tests (where a lane's time goes).
PYTEST_TIMES := --durations=15

# Core physics (no Blender), in one process. Exit code 5 (nothing collected) fails like any other non-zero code.
test-core: setup
	$(PY) -m pytest $(PYTEST_TIMES) tests/core

# The bridge against a mocked bpy and the packaging checks (Blender's blender_ext.py validator, run as a plain
# script), in one process.
test-addon: setup
	$(PY) -m pytest $(PYTEST_TIMES) tests/addon tests/test_packaging.py

# Real Blender 5.0 (bpy module), separate process from the mocked-bpy tier.
test-blender: setup
	$(PY) -m pytest $(PYTEST_TIMES) tests/blender

test-blender42: setup-blender42
	$(PY42) -m pytest $(PYTEST_TIMES) tests/blender

test-blender52: setup-blender52
	@if [ -x $(PY52) ] && [ -f $(STAMP52) ]; then $(PY52) -m pytest $(PYTEST_TIMES) tests/blender; \
	else echo "NOTICE: Blender 5.2 tier skipped (no Python 3.13)"; fi

# ---- demo / bench ---------------------------------------------------------------------------
DEMO_SCRIPTS := demo/build_demo.py demo/build_friction_demo.py demo/build_soft_demo.py demo/build_ipc_demo.py \
                demo/build_rigid_mesh_demo.py demo/build_joints_demo.py
# Extra options for every demo script; `make pictures` sets --docs.
DEMO_FLAGS :=

# Each script writes its .blend files, frames and contact sheet under out/ only.
demo: setup
	@for script in $(DEMO_SCRIPTS); do \
	  echo ">> $(PY) $$script $(DEMO_FLAGS)"; \
	  $(PY) "$$script" $(DEMO_FLAGS); \
	done

# The same run, each contact sheet also copied into docs/: commit those files when a demo's picture changed.
pictures:
	$(MAKE) demo DEMO_FLAGS=--docs

# The demo bakes' fingerprints against tests/golden/demo_hashes.json: a refactor must leave every one unchanged.
golden: setup
	$(PY) tests/golden/demo_hashes.py check

# Recorded through make so the bakes use this fingerprint's kernel cache (a hand run may reuse stale kernels).
golden-record: setup
	$(PY) tests/golden/demo_hashes.py record

# Every tests/benchmarks/bench_*.py, each in its own process; peers they compare against are
# installed into .venv on first use (pybullet ships cp311 wheels; mujoco is bench_joints.py's chain reference).
BENCH_PACKAGES := pybullet mujoco

$(VENV)/.contact_lab-bench: $(STAMP)
	$(PY) $(PIP_INSTALL) $(BENCH_PACKAGES)
	@touch $@

bench: setup $(VENV)/.contact_lab-bench
	@failed=(); \
	for b in tests/benchmarks/bench_*.py; do \
	  echo; echo "======== $$b ========"; \
	  $(PY) "$$b" || failed+=("$$b"); \
	done; \
	if [ $${#failed[@]} -ne 0 ]; then echo "make bench: FAILED: $${failed[*]}"; exit 1; fi

# The solver study (tests/benchmarks/solver_study.py): about 15 minutes; writes docs/solver-study-results.md and
# docs/solver-study-profiles.png. matplotlib (the plots) is installed into .venv on first use.
STUDY_PACKAGES := matplotlib

$(VENV)/.contact_lab-study: $(STAMP)
	$(PY) $(PIP_INSTALL) $(STUDY_PACKAGES)
	@touch $@

solver-study: setup $(VENV)/.contact_lab-study
	$(PY) tests/benchmarks/solver_study.py --docs

# ---- packaging ------------------------------------------------------------------------------
# Blender's own extension CLI ships inside the bpy wheel; it runs with plain Python, no Blender binary.
BPY_SCRIPTS = $$($(PY) -c 'import importlib.util as u, glob, os; d = u.find_spec("bpy").submodule_search_locations[0]; print(sorted(glob.glob(os.path.join(d, "[0-9]*", "scripts")))[-1])')
BLENDER_EXT = $(BPY_SCRIPTS)/addons_core/bl_pkg/cli/blender_ext.py
VALID_TAGS  = $(BPY_SCRIPTS)/modules/_bpy_internal/extensions/tags.py

validate: setup
	@echo ">> blender_ext.py validate ."
	@$(PY) $(BLENDER_EXT) validate --valid-tags=$(VALID_TAGS) .

# Wheels listed in blender_manifest.toml, per platform and Python (cp311: Blender 4.2-5.0, cp313: 5.1+).
WHEEL_PLATFORMS := manylinux_2_28_x86_64 win_amd64 macosx_12_0_arm64
WHEEL_PYTHONS   := 3.11 3.13

wheels: setup
	@mkdir -p wheels
	@for pyv in $(WHEEL_PYTHONS); do for plat in $(WHEEL_PLATFORMS); do \
	  echo ">> pip download numba==$(NUMBA_VERSION) llvmlite==$(LLVMLITE_VERSION) for Python $$pyv, $$plat"; \
	  $(PY) -m pip download -q --disable-pip-version-check --progress-bar off --dest wheels \
	      --only-binary=:all: --no-deps --python-version $$pyv --platform $$plat \
	      "numba==$(NUMBA_VERSION)" "llvmlite==$(LLVMLITE_VERSION)"; \
	done; done
	@$(PY) -c 'import tomllib, os, sys; \
	w = tomllib.load(open("blender_manifest.toml", "rb"))["wheels"]; \
	missing = [p for p in w if not os.path.isfile(p)]; \
	extra = sorted(set(os.listdir("wheels")) - {os.path.basename(p) for p in w}); \
	print("wheels: %d listed in the manifest, all present" % len(w)) if not missing else None; \
	print("wheels/ holds files the manifest does not list:", extra) if extra else None; \
	sys.exit("manifest lists wheels that were not downloaded: %s" % missing if missing else 0)'

build: wheels validate
	@mkdir -p dist
	@echo ">> blender_ext.py build --split-platforms --output-dir dist/"
	@$(PY) $(BLENDER_EXT) build --valid-tags=$(VALID_TAGS) --split-platforms --output-dir dist/
	@for z in dist/*.zip; do $(PY) $(BLENDER_EXT) validate --valid-tags=$(VALID_TAGS) "$$z" >/dev/null \
	  && echo ">> $$z: valid, $$(du -h "$$z" | cut -f1)"; done

# ---- cleaning -------------------------------------------------------------------------------
clean:
	rm -rf dist build out .pytest_cache .ruff_cache .numba_cache
	find . \( -name '.venv*' -o -name .git \) -prune -o \
	    \( -name __pycache__ -o -name '*.nbi' -o -name '*.nbc' \) -print | xargs -r rm -rf

distclean: clean
	rm -rf $(VENV) $(VENV42) $(VENV52) wheels contact_lab.egg-info .setup.lock $(TYPECHECK_DIR)
