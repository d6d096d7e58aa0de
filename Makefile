# wick: build, run, test, bench, fuzz, lint.
GO      ?= go
BIN     ?= bin/wick
PKGS    ?= ./...
FUZZTIME ?= 20s

.PHONY: all build run test bench fuzz lint setup clean

all: build

## setup: install what tests need besides Go (tmux for the end-to-end UI tests)
setup:
	@command -v tmux >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tmux; }

## build: compile the wick binary into bin/
build:
	$(GO) build -o $(BIN) .

## run: build and open the UI
run: build
	./$(BIN)

## test: every test, including the Docker ones and the tmux end-to-end tests
test:
	$(GO) test -count=1 -timeout 12m $(PKGS)

## bench: Go benchmarks, each beside what the machine can do, plus CLI timings
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 5x -timeout 20m $(PKGS)
	WICK_TEST_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench Soak -benchtime 1x -timeout 15m ./tui/wall
	bash scripts/bench.sh $(BIN)

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin
