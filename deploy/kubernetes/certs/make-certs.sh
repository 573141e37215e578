#!/usr/bin/env bash
# Makes the webhook's TLS material with openssl, without a cluster:
#   ca.crt, ca.key    a CA (EC P-256, 10 years): keep ca.key offline
#   tls.crt, tls.key  the serving certificate of oomguard.oomguard.svc
#                     (EC P-256, $DAYS days, default 365), signed by the CA
#   secret.yaml       the Secret oomguard-webhook-tls holding them
#   validating-webhook.yaml  ../validating-webhook.yaml with caBundle filled
#   mutating-webhook.yaml    ../mutating/mutating-webhook.yaml, the same
#                            (apply one of the two, ../README.md)
#
# Usage: make-certs.sh [OUT_DIR]   (default ./oomguard-certs; env NAMESPACE,
# SERVICE, DAYS change the defaults oomguard, oomguard, 365). Then:
#   kubectl apply -f OUT_DIR/secret.yaml -f OUT_DIR/validating-webhook.yaml
# To renew, run it again with the same OUT_DIR: the CA is kept (so caBundle
# stays valid) and only the serving pair is replaced; the server picks the
# new Secret up without a restart.
set -euo pipefail

out="${1:-./oomguard-certs}"
namespace="${NAMESPACE:-oomguard}"
service="${SERVICE:-oomguard}"
days="${DAYS:-365}"
here="$(cd "$(dirname "$0")" && pwd)"
host="${service}.${namespace}.svc"

mkdir -p "$out"
umask 077

if [ ! -s "$out/ca.key" ] || [ ! -s "$out/ca.crt" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$out/ca.key" -out "$out/ca.crt" -days 3650 -sha256 \
    -subj "/CN=oomguard webhook CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi

openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$out/tls.key" -out "$out/tls.csr" -subj "/CN=${host}" 2>/dev/null
cat > "$out/tls.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${host},DNS:${host}.cluster.local,DNS:${service}.${namespace}
EXT
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
  -CAcreateserial -days "$days" -sha256 -extfile "$out/tls.ext" \
  -out "$out/tls.crt" 2>/dev/null
rm -f "$out/tls.csr" "$out/tls.ext"
openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" >/dev/null

b64() { base64 < "$1" | tr -d '\n'; }

cat > "$out/secret.yaml" <<YAML
# The webhook's serving certificate (made by make-certs.sh).
apiVersion: v1
kind: Secret
metadata:
  name: oomguard-webhook-tls
  namespace: ${namespace}
  labels:
    app.kubernetes.io/name: oomguard
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "$out/tls.crt")
  tls.key: $(b64 "$out/tls.key")
YAML

# caBundle filled in; the cert-manager annotation dropped. Both webhook
# configurations: apply one of them (../README.md).
for config in validating-webhook.yaml mutating/mutating-webhook.yaml; do
  sed -E -e "s|^( *caBundle: ).*|\\1$(b64 "$out/ca.crt")|" \
         -e '/^  annotations:$/{N;/inject-ca-from/d}' \
         -e "s|^( *namespace: )oomguard$|\\1${namespace}|" \
         -e "s|^( *name: )oomguard$|\\1${service}|" \
    "$here/../$config" > "$out/$(basename "$config")"
done

echo "wrote $out/{ca.crt,ca.key,tls.crt,tls.key,secret.yaml,validating-webhook.yaml,mutating-webhook.yaml} for ${host}"
