# wick: build, run, test, bench, fuzz, lint.
GO      ?= go
BIN     ?= bin/wick
PKGS    ?= ./...
FUZZTIME ?= 20s
TORCH_IMAGE ?= wick-torch:bookworm
TEST_P ?= 4
TEST_PARALLEL ?= 4
# TEST_FIRST are the slowest packages (CI's per-package times, longest first): go test
# starts packages in the order it is given them, and ./... is alphabetical, so tui/cli
# (~500 s in CI) would start last and the run end with it alone. With these first, CI's
# test phase at -p 4 simulates at 793 s instead of 1,092 s. Only the order changes: a
# package of TEST_FIRST that PKGS does not name is not tested.
TEST_FIRST ?= ./engine/docker ./tui/cli ./engine/kubernetes ./engine/local ./components/pycomp ./engine/safefs ./engine/slurm ./tui/wall ./tui ./internal/machinecrash

# CYCLO_MAX is the most cyclomatic complexity a non-test function may have.
# CYCLO_PENDING lists, as function@file, the functions over it that are
# still to be split along their seams (issue #22): the gate holds every other function
# to it, and a function split leaves the list.
CYCLO_MAX ?= 30
CYCLO_PENDING =

.PHONY: all build run test bench fuzz lint setup clean slurm-up slurm-down k8s-build k8s-up k8s-down k8s-env k8s-load k8s-jobset k8s-jobset-off e2e-docker-torch e2e-k8s-torch metrics-report docs

all: build

## setup: install what tests need besides Go (tmux for the end-to-end UI tests; Slurm's
## packages for the slurm scheduler's tests against a throwaway cluster, see slurm-up;
## Debian's python3-torch, for /usr/bin/python3, for the real DDP tests of examples/ddp;
## the packages TorchX imports, for the tests of TorchX components, which run the TorchX
## source in ../shared/vendor/python with /usr/bin/python3; qemu and a guest kernel for
## the machine-crash test)
setup:
	@command -v tmux >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tmux; }
	@PATH="$$PATH:/usr/sbin:/sbin"; command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge; }
	@/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch; }
	@# wick stack's sampler: gdb with CPython's gdb extension (py-bt); Debian's austin
	@# (1.0.1) cannot read Python 3.11's frames.
	@{ command -v gdb >/dev/null 2>&1 && [ -e /usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py ]; } || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gdb python3-dbg; }
	@# The machine-crash test (engine/safefs) boots a guest under qemu (tcg) with
	@# Debian's cloud kernel and busybox, kept in ~/.cache/wick/vm by scripts/vm/fetch.sh.
	@command -v qemu-system-x86_64 >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86; }
	@bash scripts/vm/fetch.sh
	@# lnav, for BenchmarkSoakBesideLnav (make bench): the wall beside it on the same files
	@command -v lnav >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lnav; }
	@/usr/bin/python3 -c 'import yaml, fsspec, tabulate, filelock' >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-yaml python3-fsspec python3-tabulate python3-filelock; }

## slurm-up: start a throwaway Slurm cluster on this machine (munged, slurmctld, two
## slurmd on 127.0.0.1; root; state under /tmp/wick-slurm) for the slurm tests
slurm-up:
	bash scripts/slurm/up.sh

## slurm-down: stop the cluster slurm-up started, by pid
slurm-down:
	bash scripts/slurm/down.sh

## k8s-build: build the pinned Kubernetes components (scripts/k8s/tools: one binary,
## kube-apiserver, controller-manager, scheduler, kubelet and kubectl, from source; cold
## ~830 CPU-s) into ~/.cache/wick/k8s/VERSION-HASH, or reuse the one there
k8s-build:
	@bash scripts/k8s/build.sh && bash scripts/k8s/build.sh kubectl && bash scripts/k8s/build.sh coredns

## k8s-up: start a throwaway one-node Kubernetes cluster on this machine (etcd, the
## control plane, its own containerd and the kubelet; root; state under /tmp/wick-k8s;
## 127.0.0.1 and the bridge wick-k8s0 only) for the kubernetes tests; builds first
k8s-up:
	@command -v etcd >/dev/null 2>&1 && [ -x /usr/lib/cni/bridge ] || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server containernetworking-plugins; }
	bash scripts/k8s/up.sh

## k8s-down: stop the cluster k8s-up started, by pid, and remove its bridge, iptables
## rule, mounts and state (its logs stay in /tmp/wick-k8s/log)
k8s-down:
	bash scripts/k8s/down.sh

## k8s-jobset: install JobSet (sigs.k8s.io/jobset, scripts/k8s/jobset: its CRD and its
## controller, built from source and run out of cluster, webhooks on 127.0.0.1) on the
## cluster k8s-up started; wick then makes each app one JobSet. k8s-down stops it;
## k8s-jobset-off removes it again (a cluster without JobSet: wick makes Jobs)
k8s-jobset:
	bash scripts/k8s/jobset.sh

k8s-jobset-off:
	bash scripts/k8s/jobset.sh off

## k8s-env: print the export of the running test cluster's KUBECONFIG (make -s k8s-env)
k8s-env:
	@[ -f /tmp/wick-k8s/up ] || { echo "k8s-env: no cluster is up: make k8s-up" >&2; exit 1; }
	@echo "export KUBECONFIG=$$(cat /tmp/wick-k8s/up)"

## k8s-load: move an image from the Docker Engine onto the test cluster's node
## (make k8s-load IMAGE=NAME), for wick run -s kubernetes --image NAME
k8s-load:
	bash scripts/k8s/load.sh $(IMAGE)

## build: compile the wick binary into bin/, static (CGO_ENABLED=0): without the
## dynamic loader and libc each start of wick (every verb, every supervisor) costs
## 1-2 ms of CPU less; -trimpath keeps the build machine's paths out of the binary
## (reproducible; 22 KB smaller, no faster). wick-kubernetes, the helper that runs the
## kubernetes scheduler (client-go) for wick, goes beside it: linked into wick, client-go's
## package initialisers cost every verb 2.8x the CPU of its start; so does wick-docker,
## which runs local_docker (the Docker SDK) for wick: linked into wick, the SDK's
## initialisers cost every verb for local apps, every supervisor, 1.5-1.7x the floor's time;
## and wick-supervisor, the per-app supervisor of local apps (wick runs it, and
## `wick __supervise` where it is missing): in wick's binary every app's supervisor
## and reaper paid wick's start, its verbs' and UI's initialisers (88 packages'
## inits, not 47; 2.5 ms of CPU and 415 page faults a start, not 1.7 ms and 270)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) .
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))wick-supervisor ./cmd/wick-supervisor
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))wick-docker ./cmd/wick-docker
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))wick-kubernetes ./cmd/wick-kubernetes

## docs: write the documents generated from the code (docs/keys.md, from the UI's
## action table); TestKeysDocIsCurrent (tui) fails when it is stale
docs:
	$(GO) run ./internal/gendocs

## run: build and open the UI
run: build
	./$(BIN)

## test: every test, including the Docker ones and the tmux end-to-end tests. The
## Slurm tests use the cluster `make slurm-up` started (or the slurm.conf named by
## WICK_TEST_SLURM_CONF); WICK_TEST_SLURM=0 skips them. Waits scale with the load
## (WICK_TEST_DEADLINE_FACTOR overrides): see internal/testkit. The timeout only
## stops a hung package: at load 30 on 2 cores engine/local alone takes 7.5 minutes,
## and a CI run on a slow machine saw tui/cli take 1,067 s (420 s on a quiet one), too
## near 20 minutes.
## Most of the suite waits (on Slurm's queue, Docker, torch's rendezvous, a replica's
## sleep) rather than computes: TEST_P packages at once and TEST_PARALLEL parallel tests
## in each, not go test's defaults (GOMAXPROCS: 2 and 2 here), keep both cores busy.
test:
	@pkgs=$$({ $(GO) list $(PKGS); echo --; $(GO) list $(TEST_FIRST); echo --; $(GO) list $(PKGS); } | \
	  awk '/^--$$/ { part++; next } part == 0 { in_pkgs[$$0] = 1; next } in_pkgs[$$0] && !seen[$$0]++'); \
	  [ -n "$$pkgs" ] || { echo "make test: no packages in PKGS=$(PKGS)" >&2; exit 1; }; \
	  echo "$(GO) test -count=1 -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout 30m [$(PKGS), slowest first]"; \
	  $(GO) test -count=1 -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout 30m $$pkgs

## e2e-docker-torch: opt-in, not in CI: make an image with Debian's torch (TORCH_IMAGE,
## by scripts/docker-torch-image.sh: debootstrap + apt-get + docker import, 2 to 7
## minutes and 1.3 GB, root) and train examples/ddp on local_docker, -j 2x1 and 1x2,
## two 2x2 apps at once (rank labels), then a rank that raises (with and without
## @record) and one killed by SIGKILL
e2e-docker-torch:
	sh scripts/docker-torch-image.sh $(TORCH_IMAGE)
	WICK_DOCKER_TORCH_IMAGE=$(TORCH_IMAGE) $(GO) test -count=1 -timeout 20m -run TestDockerTorchDDP -v ./engine/docker

## e2e-k8s-torch: opt-in, not in CI: the same image with Debian's torch (TORCH_IMAGE),
## moved onto the test cluster's node (make k8s-up first), and dist.ddp on Kubernetes
## in it: 2x1 training, two 2x2 apps at once (rank labels), a rank that raises (with and
## without @record). The image takes 2 to 17 minutes to build (16 at load 30)
e2e-k8s-torch:
	sh scripts/docker-torch-image.sh $(TORCH_IMAGE)
	bash scripts/k8s/load.sh $(TORCH_IMAGE)
	WICK_K8S_TORCH_IMAGE=$(TORCH_IMAGE) $(GO) test -count=1 -timeout 40m -run TestKubernetesTorchDDP -v ./engine/kubernetes

## bench: Go benchmarks, each beside what the machine can do, plus CLI timings
bench: build
	WICK_TEST_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench . -benchtime 5x -timeout 20m $(PKGS)
	WICK_TEST_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench Soak -benchtime 1x -timeout 15m ./tui/wall
	bash scripts/bench.sh $(BIN)

## metrics-report: how the metrics read the corpus of frameworks' formats
## (engine/metrics/testdata/formats), per framework, as the README shows it
metrics-report:
	@WICK_METRICS_REPORT=1 $(GO) test -count=1 -v -run '^TestFormatsReport$$' ./engine/metrics | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS' -e '^ok '

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## lint: gofmt, go vet, staticcheck, deadcode (functions main never reaches, but
## those of internal/testkit and internal/viewtest: packages only tests import) and a
## complexity gate (gocyclo: no non-test function over 30, but those still to split,
## listed in CYCLO_PENDING); the tools' versions are pinned by the tool directives of
## go.mod (go tool NAME)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	@out=$$($(GO) tool deadcode $(PKGS)) || exit 1; \
	  out=$$(printf '%s\n' "$$out" | grep -v '^internal/\(testkit\|viewtest\)/' || true); \
	  if [ -n "$$out" ]; then echo "deadcode: functions main never reaches (delete them, or call them):"; echo "$$out"; exit 1; fi
	@all=$$($(GO) tool gocyclo -over $(CYCLO_MAX) $$(git ls-files '*.go' | grep -v '_test\.go$$')); \
	  out=$$(printf '%s\n' "$$all" | grep -v -F -e ' @none@:' $(foreach f,$(CYCLO_PENDING),-e ' $(subst @, ,$(f)):') || true); \
	  if [ -n "$$out" ]; then echo "gocyclo: functions over $(CYCLO_MAX) (split them along their seams):"; echo "$$out"; exit 1; fi; \
	  for f in $(foreach f,$(CYCLO_PENDING),'$(subst @, ,$(f))'); do \
	    printf '%s\n' "$$all" | grep -q -F " $$f:" || { echo "gocyclo: $$f is no longer over $(CYCLO_MAX): take it off CYCLO_PENDING"; exit 1; }; \
	  done

clean:
	rm -rf bin
