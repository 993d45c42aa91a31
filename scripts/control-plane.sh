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
#   scripts/control-plane.sh etcd          print the etcd path (installing it if needed) and nothing else
#   scripts/control-plane.sh recipe        print the cache folder of this recipe's binaries
#   scripts/control-plane.sh up DIR [--controller-manager | --audit]
#                                          start etcd and kube-apiserver (and kube-controller-manager:
#                                          namespace, garbage-collector and service-account controllers;
#                                          or an audit policy recording every request at Metadata, so
#                                          that every answer has an Audit-Id) in DIR; writes
#                                          DIR/admin.kubeconfig, DIR/env
#   scripts/control-plane.sh down DIR      stop them
#   scripts/control-plane.sh rotate-front-proxy DIR
#                                          new front-proxy CA and proxy certificate; kube-apiserver restarted
#
# Binaries: $ETCD, $KUBE_APISERVER, $KUBE_CONTROLLER_MANAGER (and $KUBE_SCHEDULER, $KUBELET,
# $KUBE_PROXY) when set (kind, envtest, ...);
# otherwise Debian's etcd-server, and the five Kubernetes 1.20.2 binaries built by
# the Kubernetes tree's own `make` (code generators first) from Debian's source package. They are
# cached in $FARM_CACHE (default ~/.cache/farm-apiserver) under a folder named after a hash of the
# recipe (the version and every build step below), so a changed recipe builds anew, and each
# binary's `--version` is checked before it is used. That tree vendors reflect2 v1.0.1, which
# crashes under Go >= 1.18; the upstream v1.0.2 fix (the caller allocates the whole hiter) is
# applied first.
set -euo pipefail

CACHE="${FARM_CACHE:-$HOME/.cache/farm-apiserver}"
K8S_VERSION="1.20.2"
K8S_COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy"
log() { echo "control-plane: $*" >&2; }

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -f /var/lib/apt/periodic/farm-updated ]; then apt-get update -qq; mkdir -p /var/lib/apt/periodic; touch /var/lib/apt/periodic/farm-updated; fi
  apt-get install -y -qq "$@" >/dev/null
}

ensure_etcd() {
  if [ -n "${ETCD:-}" ]; then echo "$ETCD"; return; fi
  if ! command -v etcd >/dev/null 2>&1; then log "installing etcd-server"; apt_install etcd-server; fi
  command -v etcd
}

# `apt-get source` needs a deb-src entry. When the machine has none, one is derived from its own
# deb entries for its release (same mirror, components and keyring), so no mirror is written here.
ensure_debian_sources() {
  if grep -rqs -E '^[[:space:]]*(Types:.*deb-src|deb-src[[:space:]])' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")
  python3 - "$codename" /etc/apt/sources.list.d/farm-apiserver-src <<'PY'
import glob, pathlib, sys
codename, stem = sys.argv[1], sys.argv[2]
stanzas, lines = [], []
for path in map(pathlib.Path, glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in path.read_text().split("\n\n"):
        fields = dict(line.split(":", 1) for line in stanza.splitlines()
                      if ":" in line and not line.lstrip().startswith("#"))
        fields = {key.strip(): value.strip() for key, value in fields.items()}
        if "deb" in fields.get("Types", "").split() and codename in fields.get("Suites", "").split():
            stanzas.append("Types: deb-src\n" + "".join(
                f"{key}: {codename if key == 'Suites' else fields[key]}\n"
                for key in ("URIs", "Suites", "Components", "Signed-By") if key in fields))
for path in [pathlib.Path("/etc/apt/sources.list"), *map(pathlib.Path, glob.glob("/etc/apt/sources.list.d/*.list"))]:
    if path.is_file():  # one-line entries: deb [options] URI suite components...
        lines += [" ".join(["deb-src", *words[1:]]) + "\n" for words in map(str.split, path.read_text().splitlines())
                  if words[:1] == ["deb"] and codename in words]
if not stanzas and not lines:
    sys.exit(f"control-plane: no apt entry for Debian {codename} to derive a deb-src entry from; add one")
if stanzas:
    pathlib.Path(stem + ".sources").write_text("\n".join(stanzas))
else:
    pathlib.Path(stem + ".list").write_text("".join(lines))
PY
  log "added a deb-src entry derived from the machine's apt sources"
  rm -f /var/lib/apt/periodic/farm-updated
}

patch_reflect2() {
  python3 - "$1/vendor/github.com/modern-go/reflect2" <<'PY'
import re, sys, pathlib
d = pathlib.Path(sys.argv[1])
link = d / "unsafe_link.go"
s = link.read_text()
if "m unsafe.Pointer, it *hiter)" not in s:
    s = s.replace("func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) *hiter",
                  "func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)")
    s = re.sub(r"type hiter struct \{.*?\n\}", """type hiter struct {
	key         unsafe.Pointer
	value       unsafe.Pointer
	t           unsafe.Pointer
	h           unsafe.Pointer
	buckets     unsafe.Pointer
	bptr        unsafe.Pointer
	overflow    *[]unsafe.Pointer
	oldoverflow *[]unsafe.Pointer
	startBucket uintptr
	offset      uint8
	wrapped     bool
	B           uint8
	i           uint8
	bucket      uintptr
	checkBucket uintptr
}""", s, flags=re.S)
    link.write_text(s)
m = d / "unsafe_map.go"
s = m.read_text()
old = "\treturn &UnsafeMapIterator{\n\t\thiter:      mapiterinit(type2.rtype, *(*unsafe.Pointer)(obj)),"
if old in s:
    s = s.replace(old, "\tvar it hiter\n\tmapiterinit(type2.rtype, *(*unsafe.Pointer)(obj), &it)\n\treturn &UnsafeMapIterator{\n\t\thiter:      &it,")
    m.write_text(s)
PY
}

# Downloads Debian's source package of Kubernetes into $1 (dpkg-source applies Debian's patches)
# and prints the tree's path.
fetch_kubernetes_source() {
  (cd "$1" && apt-get source -qq kubernetes >/dev/null 2>&1)
  local tree
  tree=$(ls -d "$1"/kubernetes-*/ | head -n1)
  echo "${tree%/}"
}

# Builds the binaries of this recipe into $1 with the tree's own build, which runs the code
# generators (deepcopy, defaulter, conversion, openapi) before compiling, as Debian's rules do.
build_kubernetes() {
  local out=$1 work tree
  ensure_debian_sources
  apt_install golang-go rsync dpkg-dev make
  work=$(mktemp -d "$CACHE/build.XXXXXX")
  tree=$(fetch_kubernetes_source "$work")
  patch_reflect2 "$tree"
  mkdir -p "$tree/.go/src/k8s.io"
  ln -sfn ../../.. "$tree/.go/src/k8s.io/kubernetes"
  local whats="" component
  for component in $K8S_COMPONENTS; do whats+=" cmd/$component"; done
  # Debian's Go (1.19, /usr/lib/go) first, the Go this recipe was proven with: today's machines
  # put Go 1.26 (/usr/local/go) first on the PATH, years newer than this GOPATH-mode tree.
  (cd "$tree" && env PATH="/usr/lib/go/bin:$PATH" GOPATH="$tree/.go" GOCACHE="$work/go-cache" GO111MODULE=off \
     CGO_ENABLED=0 GOFLAGS= GOTOOLCHAIN=local HOME="$work" make WHAT="${whats# }" >&2)
  rm -rf "$out.partial" && mkdir -p "$out.partial"
  for component in $K8S_COMPONENTS; do cp "$tree/_output/bin/$component" "$out.partial/"; done
  rm -rf "$out" && mv "$out.partial" "$out"
  chmod -R u+w "$work" && rm -rf "$work"
}

# The hash of the recipe: the version and the text of every step that shapes the binaries.
recipe_hash() {
  { echo "$K8S_VERSION $K8S_COMPONENTS"; declare -f ensure_debian_sources fetch_kubernetes_source patch_reflect2 build_kubernetes; } |
    sha256sum | cut -c1-12
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

# Prints the folder holding this recipe's kube-apiserver and kube-controller-manager, building
# them when the cache lacks them or they fail the version check (unless $1 is "check").
ensure_kubernetes() {
  local dir problem
  dir=$(kubernetes_dir)
  problem=$(cache_problem "$dir")
  if [ -z "$problem" ]; then echo "$dir"; return; fi
  if [ "${1:-}" = check ]; then log "$problem: run scripts/control-plane.sh binaries to build them"; return 1; fi
  # One build at a time; whoever waited finds the binaries the other built.
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  problem=$(cache_problem "$dir")
  if [ -z "$problem" ]; then echo "$dir"; return; fi
  log "$problem"
  # What an interrupted or failed build left (its tree is about 2 GB).
  find "$CACHE" -mindepth 1 -maxdepth 1 -name 'build.*' -exec rm -rf {} +
  log "building $K8S_COMPONENTS $K8S_VERSION from Debian's source package into $dir (about 15 minutes on 2 cores, once)"
  build_kubernetes "$dir"
  problem=$(cache_problem "$dir")
  if [ -n "$problem" ]; then log "the build did not produce usable binaries: $problem"; return 1; fi
  # Binaries of other recipes (and the layout before recipe hashes) only take disk space now.
  find "$CACHE" -mindepth 1 -maxdepth 1 \( -name 'kubernetes-*' -o -name bin -o -name src \) ! -path "$dir" -exec rm -rf {} +
  echo "$dir"
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
    --disable-admission-plugins ServiceAccount \
    >"$d/kube-apiserver.log" 2>&1 &
  echo $! > "$d/kube-apiserver.pid"
}

wait_ready() {
  local d=$1 port=$2
  for _ in $(seq 1 120); do
    if curl -sf --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
      log "kube-apiserver ready on 127.0.0.1:$port"
      return 0
    fi
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
  kill "$(cat "$d/kube-apiserver.pid")" 2>/dev/null || true
  while kill -0 "$(cat "$d/kube-apiserver.pid")" 2>/dev/null; do sleep 0.2; done
  make_front_proxy_certs "$d" "e2e-front-proxy-ca-rotated-$(date +%s)"
  start_kube_apiserver "$d" "$(kubernetes_binary kube-apiserver)" "$ETCD_PORT" "$KUBE_APISERVER_PORT"
  wait_ready "$d" "$KUBE_APISERVER_PORT"
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
  local etcd_port peer_port port
  etcd_port=$(free_port); peer_port=$(free_port); port=$(free_port)
  "$etcd" --data-dir "$d/etcd" --name e2e \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "e2e=http://127.0.0.1:$peer_port" >"$d/etcd.log" 2>&1 &
  echo $! > "$d/etcd.pid"
  start_kube_apiserver "$d" "$kas" "$etcd_port" "$port"
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
  printf 'KUBE_APISERVER_PORT=%s\nETCD_PORT=%s\n' "$port" "$etcd_port" > "$d/env"
  wait_ready "$d" "$port"
  if [ -n "$kcm" ]; then start_controller_manager "$d" "$kcm"; fi
}

# kube-controller-manager with the controllers that act on aggregated APIs (namespace deletion
# and garbage collection) and the service-account ones (a namespace gets its `default` account,
# without which Pod creation is refused); ready once `default` has its account.
start_controller_manager() {
  local d=$1 kcm=$2
  "$kcm" --kubeconfig "$d/admin.kubeconfig" \
    --controllers namespace,garbagecollector,serviceaccount,serviceaccount-token \
    --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
    --leader-elect=false --secure-port=0 --port=0 \
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

down() {
  local d=$1
  for p in kube-controller-manager kube-apiserver etcd; do
    if [ -f "$d/$p.pid" ]; then kill "$(cat "$d/$p.pid")" 2>/dev/null || true; fi
  done
}

# Sourced (scripts/node.sh reuses its functions), it only defines them.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    binaries | check)
      mode=${1/binaries/}
      if [ -n "$mode" ] && [ -z "${ETCD:-}" ] && ! command -v etcd >/dev/null 2>&1; then
        log "no etcd: run scripts/control-plane.sh binaries to install it"; exit 1
      fi
      ensure_etcd
      for component in $K8S_COMPONENTS; do kubernetes_binary "$component" "$mode"; done ;;
    etcd) ensure_etcd ;;
    recipe) kubernetes_dir ;;
    up) up "${2:?directory}" "${3:-}" ;;
    down) down "${2:?directory}" ;;
    rotate-front-proxy) rotate_front_proxy "${2:?directory}" ;;
    *) echo "usage: $0 binaries | check | etcd | recipe | up DIR [--controller-manager | --audit] | down DIR | rotate-front-proxy DIR" >&2; exit 2 ;;
  esac
fi
