#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for the end-to-end tests: etcd + kube-apiserver
# with the aggregation layer configured, as ../shared/DESIGN.md describes.
#
#   scripts/control-plane.sh binaries      print the etcd and kube-apiserver paths (building if needed)
#   scripts/control-plane.sh up DIR        start both in DIR; writes DIR/admin.kubeconfig, DIR/env
#   scripts/control-plane.sh down DIR      stop them
#   scripts/control-plane.sh rotate-front-proxy DIR
#                                          new front-proxy CA and proxy certificate; kube-apiserver restarted
#
# Binaries: $ETCD and $KUBE_APISERVER when set (kind, envtest, ...); otherwise Debian's etcd-server
# and a kube-apiserver 1.20.2 built from Debian's source package, cached in $FARM_CACHE
# (default ~/.cache/farm-apiserver). That tree vendors reflect2 v1.0.1, which crashes under
# Go >= 1.18; the upstream v1.0.2 fix (the caller allocates the whole hiter) is applied first.
set -euo pipefail

CACHE="${FARM_CACHE:-$HOME/.cache/farm-apiserver}"
K8S_VERSION="1.20.2"
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

ensure_kube_apiserver() {
  if [ -n "${KUBE_APISERVER:-}" ]; then echo "$KUBE_APISERVER"; return; fi
  local bin="$CACHE/bin/kube-apiserver-$K8S_VERSION"
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  log "building kube-apiserver $K8S_VERSION from Debian's source package (a few minutes, once)"
  mkdir -p "$CACHE/src" "$CACHE/bin"
  if ! ls /etc/apt/sources.list.d/*.sources 2>/dev/null | xargs grep -l "deb-src" >/dev/null 2>&1; then
    cat > /etc/apt/sources.list.d/debian-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -f /var/lib/apt/periodic/farm-updated
  fi
  apt_install golang-go rsync dpkg-dev
  local tree
  tree=$(ls -d "$CACHE"/src/kubernetes-1.20*/ 2>/dev/null | head -n1 || true)
  if [ -z "$tree" ]; then
    (cd "$CACHE/src" && apt-get source -qq kubernetes >/dev/null 2>&1)
    tree=$(ls -d "$CACHE"/src/kubernetes-1.20*/ | head -n1)
  fi
  tree=${tree%/}
  patch_reflect2 "$tree"
  mkdir -p "$tree/.go/src/k8s.io"
  ln -sfn ../../.. "$tree/.go/src/k8s.io/kubernetes"
  local version_pkg="k8s.io/kubernetes/vendor/k8s.io/component-base/version"
  (cd "$tree/.go/src/k8s.io/kubernetes" && GOPATH="$tree/.go" GO111MODULE=off CGO_ENABLED=0 \
     go build -o "$bin.tmp" -ldflags "-s -w -X $version_pkg.gitVersion=v$K8S_VERSION -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=20 -X $version_pkg.gitTreeState=clean" \
     ./cmd/kube-apiserver >&2)
  mv "$bin.tmp" "$bin"
  echo "$bin"
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
  "$kas" --etcd-servers "http://127.0.0.1:$etcd_port" \
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
  start_kube_apiserver "$d" "$(ensure_kube_apiserver)" "$ETCD_PORT" "$KUBE_APISERVER_PORT"
  wait_ready "$d" "$KUBE_APISERVER_PORT"
}

up() {
  local d
  d=$(mkdir -p "$1" && cd "$1" && pwd)
  local etcd kas
  etcd=$(ensure_etcd)
  kas=$(ensure_kube_apiserver)
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
}

down() {
  local d=$1
  for p in kube-apiserver etcd; do
    if [ -f "$d/$p.pid" ]; then kill "$(cat "$d/$p.pid")" 2>/dev/null || true; fi
  done
}

case "${1:-}" in
  binaries) ensure_etcd; ensure_kube_apiserver ;;
  up) up "${2:?directory}" ;;
  down) down "${2:?directory}" ;;
  rotate-front-proxy) rotate_front_proxy "${2:?directory}" ;;
  *) echo "usage: $0 binaries | up DIR | down DIR | rotate-front-proxy DIR" >&2; exit 2 ;;
esac
