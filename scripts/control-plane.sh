#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for the end-to-end tests: etcd + kube-apiserver
# with the aggregation layer configured, and on request kube-controller-manager, as
# ../shared/DESIGN.md describes.
#
#   scripts/control-plane.sh binaries      print the paths of etcd and of the Kubernetes binaries
#                                          (kube-apiserver, kube-controller-manager, and for
#                                          scripts/node.sh kube-scheduler, kubelet, kube-proxy),
#                                          building the Kubernetes ones when the cache lacks them
#   scripts/control-plane.sh check         the same without building: exit 1, saying why, when the
#                                          cache holds no binaries of this recipe
#   scripts/control-plane.sh etcd          print the etcd path (building it if needed) and nothing else
#   scripts/control-plane.sh helm          print the helm path (building it if needed) and nothing else
#   scripts/control-plane.sh sample-apiserver
#                                          print the path of k8s.io/sample-apiserver (building it if
#                                          needed): the reference build of k8s.io/apiserver, a peer of
#                                          the bench (benches/load/peers_setup.md runs it beside `up`)
#   scripts/control-plane.sh cel-oracle    print the path of tools/cel-oracle (building it if needed):
#                                          CEL evaluated by k8s.io/apiserver's policy compiler, the
#                                          reference of apiserver-kit's CEL tests
#   scripts/control-plane.sh json-patch-oracle
#                                          print the path of tools/json-patch-oracle (building it if
#                                          needed): JSON patches applied by gopkg.in/evanphx/json-patch.v4,
#                                          the reference of apiserver-kit's machinery::json_patch_v4
#   scripts/control-plane.sh rules-oracle  print the path of tools/rules-oracle (building it if
#                                          needed): schemas' validation rules enforced by
#                                          apiextensions-apiserver, the reference of apiserver-kit's
#                                          validation rules tests
#   scripts/control-plane.sh kubernetes-module
#                                          write tools/kubernetes anew for $K8S_VERSION
#   scripts/control-plane.sh recipe        print the cache folder of this recipe's binaries
#   scripts/control-plane.sh up DIR [--controller-manager | --audit]
#                                          start etcd and kube-apiserver (and kube-controller-manager:
#                                          namespace, garbage-collector, service-account and
#                                          ClusterRole aggregation controllers;
#                                          or an audit policy recording every request at Metadata, so
#                                          that every answer has an Audit-Id) in DIR; writes
#                                          DIR/admin.kubeconfig, DIR/env
#   scripts/control-plane.sh down DIR      stop them
#   scripts/control-plane.sh rotate-front-proxy DIR
#                                          new front-proxy CA and proxy certificate; kube-apiserver restarted
#   scripts/control-plane.sh restart-kube-apiserver DIR
#                                          kube-apiserver stopped and started again; returns at once
#
# Binaries: $ETCD, $KUBE_APISERVER, $KUBE_CONTROLLER_MANAGER (and $KUBE_SCHEDULER, $KUBELET,
# $KUBE_PROXY) when set (kind, envtest, ...); otherwise built here with the machine's Go from the
# Go module proxy, as Go modules kept in tools/: tools/kubernetes builds the five Kubernetes
# commands of $K8S_VERSION (default 1.37.2; another release for a compatibility run, e.g.
# K8S_VERSION=1.35.4, gets a go.mod written the same way), with k8s.io/kubernetes's staging
# modules replaced by their published v0.MINOR.PATCH; tools/etcd builds etcd and etcdctl
# $ETCD_VERSION; tools/helm builds helm $HELM_VERSION (`helm`, for the chart's tests; $HELM
# brings your own); tools/sample-apiserver builds k8s.io/sample-apiserver v$SAMPLE_APISERVER_VERSION
# (the release of the same Kubernetes; $SAMPLE_APISERVER brings your own). They are cached in $FARM_CACHE (default ~/.cache/farm-apiserver) under folders
# named after a hash of the recipe (the version, the module's go.mod and go.sum and every build
# step below), so a changed recipe builds anew, and each binary's `--version` is checked before
# it is used (sample-apiserver has none: its `--help` must run and its build information name
# the release). Go's own caches (GOMODCACHE, GOCACHE) are the machine's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${FARM_CACHE:-$HOME/.cache/farm-apiserver}"
K8S_DEFAULT_VERSION="1.37.2"
K8S_VERSION="${K8S_VERSION:-$K8S_DEFAULT_VERSION}"
K8S_COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy"
ETCD_VERSION="3.6.16"
HELM_VERSION="3.22.0"
SAMPLE_APISERVER_VERSION="0.37.2"
log() { echo "control-plane: $*" >&2; }

# One at a time among this repository's scripts (CI builds the image beside `make test`, and both
# may install), and waiting for another dpkg rather than failing on its lock.
apt_install() (
  export DEBIAN_FRONTEND=noninteractive
  exec 9>/run/lock/farm-apt.lock && flock 9
  if [ ! -f /var/lib/apt/periodic/farm-updated ]; then apt-get update -qq; mkdir -p /var/lib/apt/periodic; touch /var/lib/apt/periodic/farm-updated; fi
  apt-get install -o DPkg::Lock::Timeout=600 -y -qq "$@" >/dev/null
)

# Writes into $1 the go.mod (and go.sum) of the module that builds $K8S_VERSION's commands: the
# committed tools/kubernetes for the default version; for another, one written as that one was
# (`kubernetes-module` below): the commands as tools, k8s.io/kubernetes at that version, and each
# module its go.mod replaces with ./staging/… replaced by the published v0.MINOR.PATCH instead,
# then `go mod tidy` (the checksum database verifies what it adds).
kubernetes_module() {
  local dir=$1 gomod staging module
  if [ "$K8S_VERSION" = "$K8S_DEFAULT_VERSION" ]; then
    cp "$ROOT/tools/kubernetes/go.mod" "$ROOT/tools/kubernetes/go.sum" "$dir/"
    return
  fi
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
  staging="v0.${K8S_VERSION#1.}"
  {
    echo "module farm-apiserver/control-plane/kubernetes"
    echo
    grep -m1 '^go ' "$gomod"
    echo
    echo "tool ("
    for module in $K8S_COMPONENTS; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$module"; done
    echo ")"
    echo
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    echo
    echo "replace ("
    awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod" | while read -r module; do
      printf '\t%s => %s %s\n' "$module" "$module" "$staging"
    done
    echo ")"
  } > "$dir/go.mod"
  (cd "$dir" && go mod tidy >&2)
}

# The flags that make `--version` and /version tell the release, as Kubernetes' own build sets
# them (hack/lib/version.sh): a module build otherwise says v0.0.0-master. The build date is the
# release's, from the module proxy, so that a build is the same whenever it runs.
kubernetes_ldflags() {
  local date minor=${K8S_VERSION#1.} package
  minor=${minor%%.*}
  date=$(cd "$1" && go list -m -json "k8s.io/kubernetes" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Time"])')
  printf -- '-s -w'
  for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- ' -X %s.%s' "$package" "gitVersion=v$K8S_VERSION" "$package" "gitMajor=1" "$package" "gitMinor=$minor" \
      "$package" "gitTreeState=clean" "$package" "buildDate=$date"
  done
}

# Builds the binaries of this recipe into $1: `go build` of the module's tools, static
# (CGO_ENABLED=0, as Kubernetes' release binaries are) and without local paths (-trimpath).
build_kubernetes() {
  local out=$1 work component packages=()
  work=$(mktemp -d "$CACHE/build.XXXXXX")
  kubernetes_module "$work"
  for component in $K8S_COMPONENTS; do packages+=("k8s.io/kubernetes/cmd/$component"); done
  rm -rf "$out.partial" && mkdir -p "$out.partial"
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "$(kubernetes_ldflags "$work")" -o "$out.partial/" "${packages[@]}" >&2)
  rm -rf "$out" && mv "$out.partial" "$out"
  rm -rf "$work"
}

# The hash of a recipe: its version, its module's files and the text of every step that shapes
# the binaries.
recipe_hash() {
  { echo "$K8S_VERSION $K8S_COMPONENTS"; cat "$ROOT/tools/kubernetes/go.mod" "$ROOT/tools/kubernetes/go.sum";
    declare -f kubernetes_module kubernetes_ldflags build_kubernetes; } | sha256sum | cut -c1-12
}

kubernetes_dir() { echo "$CACHE/kubernetes-$K8S_VERSION-$(recipe_hash)"; }

# Why the binaries in $1 cannot be used (nothing when they can): a component is missing, or its
# `--version` does not print this recipe's version.
cache_problem() {
  local component version
  for component in $K8S_COMPONENTS; do
    if [ ! -x "$1/$component" ]; then echo "no $component in $1"; return; fi
    version=$("$1/$component" --version 2>&1 || true)
    if [ "$version" != "Kubernetes v$K8S_VERSION" ]; then
      echo "$1/$component --version printed '$version', not 'Kubernetes v$K8S_VERSION'"; return
    fi
  done
}

# Runs `$2 $1` once for the cache (one build at a time: whoever waited finds what the other built)
# unless `$3 $1` says nothing is missing; prints $1 when it holds usable binaries. The lock is
# held by a subshell of its own and released when it ends: held by the caller's shell, it would
# make the next build_once of the same run (etcd's, then Kubernetes' in a command substitution)
# wait for it forever, as a cold `binaries` did.
build_once() {
  local dir=$1 build=$2 problem_of=$3
  mkdir -p "$CACHE"
  (
    flock 9
    problem=$("$problem_of" "$dir")
    if [ -z "$problem" ]; then exit 0; fi
    log "$problem"
    # What an interrupted or failed build left.
    find "$CACHE" -mindepth 1 -maxdepth 1 -name 'build.*' -exec rm -rf {} +
    "$build" "$dir"
    problem=$("$problem_of" "$dir")
    if [ -n "$problem" ]; then log "the build did not produce usable binaries: $problem"; exit 1; fi
  ) 9>"$CACHE/.lock" || return 1
  echo "$dir"
}

# Prints the folder holding this recipe's Kubernetes binaries, building them when the cache lacks
# them or they fail the version check (unless $1 is "check").
ensure_kubernetes() {
  local dir problem
  dir=$(kubernetes_dir)
  problem=$(cache_problem "$dir")
  if [ -z "$problem" ]; then echo "$dir"; return; fi
  if [ "${1:-}" = check ]; then log "$problem: run scripts/control-plane.sh binaries to build them"; return 1; fi
  log "building $K8S_COMPONENTS $K8S_VERSION from the Go module proxy into $dir (about 20 minutes on 2 cores, once)"
  build_once "$dir" build_kubernetes cache_problem
  # Binaries of other recipes of this version (and the layout before recipe hashes) only take
  # disk space now; other versions stay, for compatibility runs.
  find "$CACHE" -mindepth 1 -maxdepth 1 \( -name "kubernetes-$K8S_VERSION-*" -o -name bin -o -name src \) ! -path "$dir" -exec rm -rf {} +
}

# The path of one control-plane binary: the variable naming it ($KUBE_APISERVER, ...) when set,
# else this recipe's build. $2 = "check" never builds.
kubernetes_binary() {
  local component=$1 variable dir
  variable=$(tr 'a-z-' 'A-Z_' <<<"$component")
  if [ -n "${!variable:-}" ]; then echo "${!variable}"; return; fi
  dir=$(ensure_kubernetes "${2:-}")
  echo "$dir/$component"
}

# Builds into $1 commands of the Go module tools/$2 (its go.mod, go.sum and any Go files of its
# own), static and without local paths: each further argument is "BINARY PACKAGE [-X …]", its
# extra link flags after the package.
build_tools() {
  local out=$1 module=$2 work spec binary package flags
  shift 2
  work=$(mktemp -d "$CACHE/build.XXXXXX")
  cp "$ROOT/tools/$module/go.mod" "$ROOT/tools/$module/go.sum" $(tool_sources "$module") "$work/"
  rm -rf "$out.partial" && mkdir -p "$out.partial"
  for spec in "$@"; do
    read -r binary package flags <<<"$spec"
    (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $flags" -o "$out.partial/$binary" "$package" >&2)
  done
  rm -rf "$out" && mv "$out.partial" "$out"
  rm -rf "$work"
}

# The Go files of tools/$1 itself (a main package of ours), if any.
tool_sources() { find "$ROOT/tools/$1" -maxdepth 1 -name '*.go' | sort; }

# The cache folder of the recipe that `$3` builds from tools/$2, named $1-<hash of the module, its
# Go files and the build's steps>.
tools_dir() {
  echo "$CACHE/$1-$({ cat "$ROOT/tools/$2/go.mod" "$ROOT/tools/$2/go.sum" $(tool_sources "$2"); declare -f "$3" build_tools; } | sha256sum | cut -c1-12)"
}

# Fills the cache folder $1 with `$2 $1` unless `$3 $1` finds nothing missing, then removes the
# folders of other recipes of it (named like $4); the log calls it $5.
ensure_tools() {
  local dir=$1 build=$2 problem_of=$3 others=$4 what=$5 problem
  problem=$("$problem_of" "$dir")
  if [ -n "$problem" ]; then
    log "building $what from the Go module proxy into $dir (once)"
    build_once "$dir" "$build" "$problem_of" >/dev/null
    find "$CACHE" -mindepth 1 -maxdepth 1 -name "$others" ! -path "$dir" -exec rm -rf {} +
  fi
}

# Builds etcd and etcdctl of tools/etcd into $1.
build_etcd() {
  build_tools "$1" etcd "etcd go.etcd.io/etcd/server/v3" "etcdctl go.etcd.io/etcd/etcdctl/v3" "etcdutl go.etcd.io/etcd/etcdutl/v3"
}

etcd_dir() { tools_dir "etcd-$ETCD_VERSION" etcd build_etcd; }

# Why the etcd in $1 cannot be used (nothing when it can).
etcd_problem() {
  local version
  if [ ! -x "$1/etcd" ] || [ ! -x "$1/etcdctl" ] || [ ! -x "$1/etcdutl" ]; then echo "no etcd in $1"; return; fi
  version=$("$1/etcd" --version 2>&1 | head -n1 || true)
  if [ "$version" != "etcd Version: $ETCD_VERSION" ]; then echo "$1/etcd --version printed '$version', not 'etcd Version: $ETCD_VERSION'"; fi
}

# The etcd binary: $ETCD when set, else this recipe's build (built when missing, unless $1 is
# "check").
ensure_etcd() {
  if [ -n "${ETCD:-}" ]; then echo "$ETCD"; return; fi
  local dir problem
  dir=$(etcd_dir)
  problem=$(etcd_problem "$dir")
  if [ -n "$problem" ] && [ "${1:-}" = check ]; then
    log "$problem: run scripts/control-plane.sh binaries to build it"; return 1
  fi
  ensure_tools "$dir" build_etcd etcd_problem 'etcd-*' "etcd $ETCD_VERSION"
  echo "$dir/etcd"
}

# Builds helm of tools/helm into $1 (the chart's tests install charts/farm-apiserver with it),
# its version stamped as a release build stamps it.
build_helm() { build_tools "$1" helm "helm helm.sh/helm/v3/cmd/helm -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION"; }

helm_dir() { tools_dir "helm-$HELM_VERSION" helm build_helm; }

# Why the helm in $1 cannot be used (nothing when it can).
helm_problem() {
  local version
  if [ ! -x "$1/helm" ]; then echo "no helm in $1"; return; fi
  version=$("$1/helm" version --template '{{.Version}}' 2>&1 || true)
  if [ "$version" != "v$HELM_VERSION" ]; then echo "$1/helm version printed '$version', not 'v$HELM_VERSION'"; fi
}

# Builds k8s.io/sample-apiserver of tools/sample-apiserver into $1, as the module proxy serves it
# (no version stamped: its /version says v0.0.0-master, as any module build of it does).
build_sample_apiserver() { build_tools "$1" sample-apiserver "sample-apiserver k8s.io/sample-apiserver"; }

# Why the sample-apiserver in $1 cannot be used (nothing when it can): it has no version flag, so
# its `--help` must run and the build information Go wrote into it (`go version -m`) must name
# the release.
sample_apiserver_problem() {
  local help modules
  if [ ! -x "$1/sample-apiserver" ]; then echo "no sample-apiserver in $1"; return; fi
  help=$("$1/sample-apiserver" --help 2>&1 | head -n1 || true)
  if [ "$help" != "Launch a wardle API server" ]; then
    echo "$1/sample-apiserver --help printed '$help', not 'Launch a wardle API server'"; return
  fi
  modules=$(go version -m "$1/sample-apiserver" 2>&1 || true)
  if ! grep -Eq "^[[:space:]]+(mod|dep)[[:space:]]+k8s\.io/sample-apiserver[[:space:]]+v${SAMPLE_APISERVER_VERSION}[[:space:]]" <<<"$modules"; then
    echo "$1/sample-apiserver is not built from k8s.io/sample-apiserver v$SAMPLE_APISERVER_VERSION"
  fi
}

# The sample-apiserver binary: $SAMPLE_APISERVER when set, else this recipe's build (built when
# missing).
ensure_sample_apiserver() {
  if [ -n "${SAMPLE_APISERVER:-}" ]; then echo "$SAMPLE_APISERVER"; return; fi
  local dir
  dir=$(tools_dir "sample-apiserver-$SAMPLE_APISERVER_VERSION" sample-apiserver build_sample_apiserver)
  ensure_tools "$dir" build_sample_apiserver sample_apiserver_problem 'sample-apiserver-*' "sample-apiserver $SAMPLE_APISERVER_VERSION"
  echo "$dir/sample-apiserver"
}

# Builds tools/cel-oracle (a main package of ours over k8s.io/apiserver's CEL) into $1.
build_cel_oracle() { build_tools "$1" cel-oracle "cel-oracle ."; }

# Why the oracle in $1 cannot be used (nothing when it can).
cel_oracle_problem() {
  if [ ! -x "$1/cel-oracle" ]; then echo "no cel-oracle in $1"; return; fi
  if [ "$(echo '{"expression": "1 + 1"}' | "$1/cel-oracle" 2>&1)" != '{"value":{"int":"2"},"type":"int","cost":1}' ]; then
    echo "$1/cel-oracle does not evaluate 1 + 1"
  fi
}

# The CEL oracle: built when missing.
ensure_cel_oracle() {
  local dir
  dir=$(tools_dir cel-oracle cel-oracle build_cel_oracle)
  ensure_tools "$dir" build_cel_oracle cel_oracle_problem 'cel-oracle-*' "the CEL oracle"
  echo "$dir/cel-oracle"
}

# Builds tools/json-patch-oracle (a main package of ours over gopkg.in/evanphx/json-patch.v4)
# into $1.
build_json_patch_oracle() { build_tools "$1" json-patch-oracle "json-patch-oracle ."; }

# Why the oracle in $1 cannot be used (nothing when it can).
json_patch_oracle_problem() {
  if [ ! -x "$1/json-patch-oracle" ]; then echo "no json-patch-oracle in $1"; return; fi
  if [ "$(echo '{"doc": {}, "patch": [{"op": "add", "path": "/a", "value": 1}]}' | "$1/json-patch-oracle" 2>&1)" != '{"doc":{"a":1}}' ]; then
    echo "$1/json-patch-oracle does not add /a to {}"
  fi
}

# The JSON patch oracle: built when missing.
ensure_json_patch_oracle() {
  local dir
  dir=$(tools_dir json-patch-oracle json-patch-oracle build_json_patch_oracle)
  ensure_tools "$dir" build_json_patch_oracle json_patch_oracle_problem 'json-patch-oracle-*' "the JSON patch oracle"
  echo "$dir/json-patch-oracle"
}

# Builds tools/rules-oracle (a main package of ours over apiextensions-apiserver's validation
# rules) into $1.
build_rules_oracle() { build_tools "$1" rules-oracle "rules-oracle ."; }

# Why the rules oracle in $1 cannot be used (nothing when it can).
rules_oracle_problem() {
  local schema='{"type":"object","x-kubernetes-validations":[{"rule":"false"}]}'
  if [ ! -x "$1/rules-oracle" ]; then echo "no rules-oracle in $1"; return; fi
  if [ "$(echo "{\"schema\": $schema, \"object\": {}}" | "$1/rules-oracle" 2>&1 | head -c 54)" != '{"errors":["<nil>: Invalid value: failed rule: false"]' ]; then
    echo "$1/rules-oracle does not validate"
  fi
}

# The validation rules' oracle: built when missing.
ensure_rules_oracle() {
  local dir
  dir=$(tools_dir rules-oracle rules-oracle build_rules_oracle)
  ensure_tools "$dir" build_rules_oracle rules_oracle_problem 'rules-oracle-*' "the validation rules' oracle"
  echo "$dir/rules-oracle"
}

# The helm binary: $HELM when set, else this recipe's build (built when missing).
ensure_helm() {
  if [ -n "${HELM:-}" ]; then echo "$HELM"; return; fi
  local dir
  dir=$(helm_dir)
  ensure_tools "$dir" build_helm helm_problem 'helm-*' "helm $HELM_VERSION"
  echo "$dir/helm"
}

# Writes tools/kubernetes anew for $K8S_VERSION (to move the default: set K8S_DEFAULT_VERSION
# above to the same release afterwards).
write_kubernetes_module() {
  local work
  work=$(mktemp -d)
  K8S_DEFAULT_VERSION=none kubernetes_module "$work"
  cp "$work/go.mod" "$work/go.sum" "$ROOT/tools/kubernetes/"
  rm -rf "$work"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

make_certs() {
  local d=$1
  cd "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.crt -subj "/CN=e2e-ca" 2>/dev/null
  cat > san.cnf <<'EOF'
[req]
distinguished_name = dn
[dn]
[ext]
subjectAltName = DNS:localhost,IP:127.0.0.1,DNS:kubernetes.default.svc
extendedKeyUsage = serverAuth
EOF
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.cnf -extensions ext -out apiserver.crt 2>/dev/null
  printf '[ext]\nextendedKeyUsage = clientAuth\n' > client.cnf
  openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=e2e-admin" 2>/dev/null
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.cnf -extensions ext -out admin.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout nobody.key -out nobody.csr -subj "/CN=e2e-nobody" 2>/dev/null
  openssl x509 -req -in nobody.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.cnf -extensions ext -out nobody.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  cd - >/dev/null
  make_front_proxy_certs "$d" e2e-front-proxy-ca
}

# The front-proxy CA and the client certificate the aggregator presents to extension servers.
make_front_proxy_certs() {
  local d=$1 name=$2
  cd "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout front-proxy-ca.key -out front-proxy-ca.crt -subj "/CN=$name" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout front-proxy-client.key -out front-proxy-client.csr -subj "/CN=front-proxy-client" 2>/dev/null
  openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial -days 2 -extfile client.cnf -extensions ext -out front-proxy-client.crt 2>/dev/null
  cd - >/dev/null
}

# Its discovery manager logs which discovery it took from each aggregated server (`--vmodule
# handler_discovery=3`: "Successfully downloaded discovery", or "… legacy discovery" after a
# fallback), which the e2e tests read.
# On loopback: the kubernetes Service's endpoints are not kept (no Pod could reach 127.0.0.1),
# as the endpoint reconciler of today's releases refuses a loopback address: "cannot use public IP
# 127.0.0.1 with endpoint reconciler", pkg/controlplane/instance.go in 1.37.2).
start_kube_apiserver() {
  local d=$1 kas=$2 etcd_port=$3 port=$4
  local audit=()
  # With an audit policy (up --audit), every answer carries an Audit-Id header.
  if [ -f "$d/audit-policy.yaml" ]; then
    audit=(--audit-policy-file "$d/audit-policy.yaml" --audit-log-path "$d/audit.log")
  fi
  "$kas" --etcd-servers "http://127.0.0.1:$etcd_port" "${audit[@]}" \
    --bind-address 127.0.0.1 --secure-port "$port" --advertise-address 127.0.0.1 \
    --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
    --client-ca-file "$d/ca.crt" \
    --service-account-key-file "$d/sa.pub" --service-account-signing-key-file "$d/sa.key" \
    --service-account-issuer "https://kubernetes.default.svc" \
    --service-cluster-ip-range 10.96.0.0/24 \
    --authorization-mode Node,RBAC \
    --requestheader-client-ca-file "$d/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$d/front-proxy-client.crt" --proxy-client-key-file "$d/front-proxy-client.key" \
    --enable-aggregator-routing=false \
    --endpoint-reconciler-type none \
    --disable-admission-plugins ServiceAccount \
    --vmodule handler_discovery=3 \
    >"$d/kube-apiserver.log" 2>&1 &
  echo $! > "$d/kube-apiserver.pid"
}

wait_ready() {
  local d=$1 port=$2 p
  for _ in $(seq 1 120); do
    if curl -sf --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
      log "kube-apiserver ready on 127.0.0.1:$port"
      return 0
    fi
    for p in etcd kube-apiserver; do
      if ! kill -0 "$(cat "$d/$p.pid")" 2>/dev/null; then
        log "$p exited; last log lines:"; tail -n 30 "$d/$p.log" >&2
        return 1
      fi
    done
    sleep 0.5
  done
  log "kube-apiserver did not become ready; last log lines:"; tail -n 30 "$d/kube-apiserver.log" >&2
  return 1
}

# Rotates the front-proxy CA: new CA and proxy client certificate, kube-apiserver restarted on the
# same etcd and port (it publishes the new CA in kube-system/extension-apiserver-authentication).
rotate_front_proxy() {
  local d
  d=$(cd "$1" && pwd)
  # shellcheck disable=SC1091
  . "$d/env"
  stop "$d/kube-apiserver.pid"
  make_front_proxy_certs "$d" "e2e-front-proxy-ca-rotated-$(date +%s)"
  start_kube_apiserver "$d" "$(kubernetes_binary kube-apiserver)" "$ETCD_PORT" "$KUBE_APISERVER_PORT"
  wait_ready "$d" "$KUBE_APISERVER_PORT"
}

# Stops the kube-apiserver of the control plane in $1 and starts it again as `up` did, on its etcd
# and port, returning at once (the bench times its start with what etcd holds).
restart_kube_apiserver() {
  local d
  d=$(cd "$1" && pwd)
  # shellcheck disable=SC1091
  . "$d/env"
  stop "$d/kube-apiserver.pid"
  start_kube_apiserver "$d" "$(kubernetes_binary kube-apiserver)" "$ETCD_PORT" "$KUBE_APISERVER_PORT"
}

up() {
  local d
  d=$(mkdir -p "$1" && cd "$1" && pwd)
  local etcd kas kcm=""
  etcd=$(ensure_etcd)
  kas=$(kubernetes_binary kube-apiserver)
  case "${2:-}" in
    --controller-manager) kcm=$(kubernetes_binary kube-controller-manager) ;;
    --audit) printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n' > "$d/audit-policy.yaml" ;;
    "") ;;
    *) echo "unknown option: $2" >&2; exit 2 ;;
  esac
  make_certs "$d"
  # A free port can be taken by another test between its choice and the bind (the CI saw
  # kube-apiserver exit with "bind: address already in use"): then both start again on others.
  local attempt
  for attempt in 1 2 3 4 5; do
    start_on_free_ports "$d" "$etcd" "$kas" && break
    grep -qs "address already in use" "$d/etcd.log" "$d/kube-apiserver.log" && [ "$attempt" -lt 5 ] || return 1
    log "a port was taken before its server bound it (attempt $attempt); starting on other ports"
    stop "$d/kube-apiserver.pid"; stop "$d/etcd.pid"; rm -rf "$d/etcd"
  done
  if [ -n "$kcm" ]; then start_controller_manager "$d" "$kcm"; fi
}

# etcd and kube-apiserver on ports chosen now, the kubeconfigs and `env` naming them; fails when
# either exits before kube-apiserver is ready.
start_on_free_ports() {
  local d=$1 etcd=$2 kas=$3
  local etcd_port peer_port port
  etcd_port=$(free_port); peer_port=$(free_port); port=$(free_port)
  "$etcd" --data-dir "$d/etcd" --name e2e \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "e2e=http://127.0.0.1:$peer_port" >"$d/etcd.log" 2>&1 &
  echo $! > "$d/etcd.pid"
  start_kube_apiserver "$d" "$kas" "$etcd_port" "$port"
  write_kubeconfigs "$d" "$port"
  printf 'KUBE_APISERVER_PORT=%s\nETCD_PORT=%s\n' "$port" "$etcd_port" > "$d/env"
  wait_ready "$d" "$port"
}

write_kubeconfigs() {
  local d=$1 port=$2
  cat > "$d/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $d/ca.crt
users:
- name: admin
  user:
    client-certificate: $d/admin.crt
    client-key: $d/admin.key
contexts:
- name: e2e
  context: {cluster: e2e, user: admin, namespace: default}
current-context: e2e
EOF
  # A user with no RBAC at all, for the tests of what the server does when it may not list pods.
  sed -e "s#$d/admin.crt#$d/nobody.crt#" -e "s#$d/admin.key#$d/nobody.key#" -e "s#name: admin#name: nobody#" \
      -e "s#user: admin#user: nobody#" "$d/admin.kubeconfig" > "$d/nobody.kubeconfig"
}

# kube-controller-manager with the controllers that act on aggregated APIs (namespace deletion
# and garbage collection), the service-account ones (a namespace gets its `default` account,
# without which Pod creation is refused) and the ClusterRole aggregation (the default `view`,
# `edit` and `admin` roles take the rules of the roles labelled for them); ready once `default`
# has its account.
start_controller_manager() {
  local d=$1 kcm=$2
  "$kcm" --kubeconfig "$d/admin.kubeconfig" \
    --controllers namespace,garbagecollector,serviceaccount,serviceaccount-token,clusterrole-aggregation \
    --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
    --leader-elect=false --secure-port=0 \
    >"$d/kube-controller-manager.log" 2>&1 &
  echo $! > "$d/kube-controller-manager.pid"
  local url
  url="https://127.0.0.1:$(sed -n 's/^KUBE_APISERVER_PORT=//p' "$d/env")/api/v1/namespaces/default/serviceaccounts/default"
  for _ in $(seq 1 120); do
    if curl -sf --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "$url" >/dev/null 2>&1; then
      log "kube-controller-manager ready"
      return 0
    fi
    kill -0 "$(cat "$d/kube-controller-manager.pid")" 2>/dev/null || break
    sleep 0.5
  done
  log "kube-controller-manager did not become ready; last log lines:"; tail -n 30 "$d/kube-controller-manager.log" >&2
  return 1
}

# Stops the process whose id the file $1 holds, if any, and returns once it has exited: SIGTERM,
# then SIGKILL after 30 s. (kube-apiserver 1.37 takes seconds to shut down, and one whose etcd
# was stopped beside it was seen still running 40 minutes later, after its test had gone.)
stop() {
  local pid
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -9 "$pid" 2>/dev/null || true
}

# Stops what `up` started, each once the one that uses it has exited.
down() {
  local d=$1 p
  for p in kube-controller-manager kube-apiserver etcd; do stop "$d/$p.pid"; done
}

# Sourced (scripts/node.sh reuses its functions), it only defines them.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    binaries | check)
      mode=${1/binaries/}
      ensure_etcd "$mode"
      for component in $K8S_COMPONENTS; do kubernetes_binary "$component" "$mode"; done ;;
    etcd) ensure_etcd ;;
    helm) ensure_helm ;;
    sample-apiserver) ensure_sample_apiserver ;;
    cel-oracle) ensure_cel_oracle ;;
    json-patch-oracle) ensure_json_patch_oracle ;;
    rules-oracle) ensure_rules_oracle ;;
    recipe) kubernetes_dir ;;
    kubernetes-module) write_kubernetes_module ;;
    up) up "${2:?directory}" "${3:-}" ;;
    down) down "${2:?directory}" ;;
    rotate-front-proxy) rotate_front_proxy "${2:?directory}" ;;
    restart-kube-apiserver) restart_kube_apiserver "${2:?directory}" ;;
    *) echo "usage: $0 binaries | check | etcd | helm | sample-apiserver | cel-oracle | json-patch-oracle | rules-oracle | recipe | kubernetes-module | up DIR [--controller-manager | --audit] | down DIR | rotate-front-proxy DIR | restart-kube-apiserver DIR" >&2; exit 2 ;;
  esac
fi
