# vapc: ValidatingAdmissionPolicies as Go code, checked and replayed as kube-apiserver decides.
GO       ?= go
BIN      := bin
VAPC     := $(BIN)/vapc
PKGS     := ./...
# the packages whose tests have golden files and define -update (cmd/vapc's TestGoldenPackages
# keeps the list complete)
GOLDEN_PKGS := ./cel/schema ./cel/vap ./cmd/vapc ./policies ./verify/replay ./verify/replay/internal/auditlog/export ./verify/report

.PHONY: all build test unit e2e e2e-tools chromium bench fuzz golden policies generate openapi verify lint check clean dist dist-linux image image-test ci-packages

FUZZTIME ?= 15s

all: build

## build: compile bin/vapc
build:
	$(GO) build -o $(VAPC) ./cmd/vapc

# Release binaries: static, reproducible, stamped with the version (vapc version).
DIST     := dist
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
ARCHES   ?= amd64 arm64
LDFLAGS  := -s -w -X main.version=$(VERSION)

## dist: release binaries for linux and darwin, amd64 and arm64, and their SHA256SUMS, in dist/
dist: dist-linux
	for arch in $(ARCHES); do \
	  CGO_ENABLED=0 GOOS=darwin GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/vapc-darwin-$$arch ./cmd/vapc || exit 1; \
	done
	cd $(DIST) && sha256sum vapc-* > SHA256SUMS

## dist-linux: the linux binaries of dist/ (ARCHES=amd64 for one), which the container image holds
dist-linux:
	for arch in $(ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/vapc-linux-$$arch ./cmd/vapc || exit 1; \
	done

## image: the container image vapc:$(VERSION), FROM scratch, for this machine's architecture
image:
	$(MAKE) dist-linux ARCHES=$$($(GO) env GOARCH)
	podman build --build-arg TARGETARCH=$$($(GO) env GOARCH) -t vapc:$(VERSION) .

## image-test: build the image and smoke-test it with podman or buildah (hack/image-test.sh)
image-test:
	hack/image-test.sh

## ci-packages: the Debian packages CI needs beyond Go (podman, runc, zsh, fish), when missing
ci-packages:
	hack/ci-packages.sh

## test: every test, the end-to-end tests against a real kube-apiserver (VAPC_E2E=1) and the
## report's browser test included
test: e2e-tools chromium
	VAPC_E2E=1 VAPC_BROWSER=1 $(GO) test -count=1 -timeout 45m $(PKGS)

## unit: the fast tests only: go test ./... without VAPC_E2E skips the tests that start a
## real kube-apiserver (the report's browser test runs headless Chromium)
unit: chromium
	VAPC_BROWSER=1 $(GO) test -short $(PKGS)

## e2e-tools: build kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kubectl at their pinned versions into .cache/e2e
e2e-tools:
	hack/e2e-tools.sh

## chromium: install Debian's chromium for the report's browser test where no Chromium is found
chromium:
	hack/chromium.sh

## e2e: the real-apiserver parity tests
e2e: e2e-tools
	VAPC_E2E=1 $(GO) test -count=1 -v -timeout 30m ./verify/e2e/...

## bench: Go benchmarks, then the 1M-event replay against its decode floor (hack/bench.sh, with
## internal/cmd/vapc-bench)
bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	hack/bench.sh

## fuzz: run every fuzz target for FUZZTIME each (hack/fuzz.sh: a failure is a failing input
## written, or a corpus that fails)
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' hack/fuzz.sh \
		./cel/manifest:FuzzParse \
		./cel:FuzzLoadAndCheck \
		./policies:FuzzParseSettings \
		./verify/replay:FuzzReplayLines \
		./verify/replay/internal/auditlog:FuzzMemberString \
		./verify/replay/internal/auditlog:FuzzDecodeEventFast \
		./verify/replay/internal/auditlog:FuzzDecodeObject \
		./verify/replay/internal/auditlog/export:FuzzReadWebhook \
		./verify/replay/internal/auditlog/export:FuzzReadCloudWatch \
		./verify/replay/internal/auditlog/export:FuzzReadCloudWatchS3 \
		./verify/replay/internal/auditlog/export:FuzzReadFirehose \
		./verify/replay/internal/auditlog/export:FuzzReadAzureBlob \
		./verify/replay/internal/auditlog/export:FuzzReadAzureEventHub \
		./verify/replay/internal/auditlog/export:FuzzReadGKE \
		./verify/replay/internal/auditlog/export:FuzzReadAzureLogAnalytics \
		./verify/replay/internal/auditlog/export:FuzzReadPrettyEvents \
		./verify/replay/internal/auditlog/export:FuzzReadEventArray \
		./verify/replay/internal/auditlog/export:FuzzReadContainerLog \
		./verify/replay/internal/auditlog/export:FuzzDetect \
		./verify/replay/internal/auditlog/export:FuzzUnquote \
		./verify/replay/internal/auditlog/export:FuzzValidJSON

## golden: rewrite the golden files of every package that has them
golden:
	$(GO) test $(GOLDEN_PKGS) -update

## policies: emit the in-tree policies' YAML from their Go source
policies:
	$(GO) run ./cmd/vapc emit --out policies

## generate: every generated file
generate: openapi policies

## openapi: extract the built-in OpenAPI v3 schemas of the pinned Kubernetes version
openapi:
	hack/openapi.sh

## check: the main job: check the in-tree policies, run their suites, replay a recorded log through them
check: build
	$(VAPC) check policies/
	$(VAPC) test policies/testdata testdata/suites
	$(VAPC) replay --policies policies/ testdata/audit/kosmos-basic/audit.log.gz

## verify: formatting, vet, go.mod tidiness and generated files up to date
verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	@cp go.mod /tmp/vapc.go.mod.bak; cp go.sum /tmp/vapc.go.sum.bak; \
	  $(GO) mod tidy; \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go.mod/go.sum not tidy"; git diff -- go.mod go.sum; cp /tmp/vapc.go.mod.bak go.mod; cp /tmp/vapc.go.sum.bak go.sum; exit 1; fi
	cd examples/custom-policies && GOWORK=off $(GO) mod tidy -diff
	cd verify/e2e/tools && $(GO) mod tidy -diff
	cd verify/e2e/tools/etcd && $(GO) mod tidy -diff
	$(MAKE) -s policies
	@git diff --exit-code -- policies/ || { echo "policies/ is stale: run make policies and commit"; exit 1; }

## lint: vet plus the policy checks
lint: build
	$(GO) vet $(PKGS)
	$(VAPC) check policies/

clean:
	rm -rf $(BIN) $(DIST)
