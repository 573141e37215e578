#!/usr/bin/env python3
"""Checks deploy/kubernetes/ and deploy/container/ without a cluster.

Parses every manifest and checks the fields the webhook depends on:
hardening and probes of the Deployment, ports that line up between the
server flags, the Deployment, the Service and the webhook configuration, the
webhook's policy (sideEffects, failurePolicy, timeout, selectors, rules),
the NetworkPolicy (the webhook port from IP blocks only, gRPC and metrics
from the cluster's pods),
that every flag exists in service/serve_flags.cc, the Dockerfile's stages
and user, and (with openssl) that certs/make-certs.sh makes a chain the
caBundle verifies.

Usage: webhook_deploy_test.py DEPLOY_DIR. Exits 77 (skip) without
python3-yaml.
"""
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import yaml
except ImportError:
    print("python3-yaml is not installed: skipping")
    sys.exit(77)

DEPLOY = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "deploy")
K8S = os.path.join(DEPLOY, "kubernetes")
REPO = os.path.dirname(os.path.abspath(DEPLOY))


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def manifests():
    docs = {}
    for root, _, files in os.walk(K8S):
        for name in sorted(files):
            if name.endswith(".yaml"):
                path = os.path.join(root, name)
                docs[os.path.relpath(path, K8S)] = load(path)
    return docs


def one(kind):
    found = [d for docs in manifests().values() for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{kind}: {len(found)} documents"
    return found[0]


def flags(args):
    out = {}
    for a in args:
        m = re.fullmatch(r"--([a-z_]+)(?:=(.*))?", a)
        assert m, a
        out[m.group(1)] = m.group(2)
    return out


class Manifests(unittest.TestCase):
    def test_every_yaml_parses_with_kind_and_api_version(self):
        docs = manifests()
        self.assertIn("validating-webhook.yaml", docs)
        for name, parsed in docs.items():
            for d in parsed:
                self.assertIn("kind", d, name)
                self.assertIn("apiVersion", d, name)

    def test_kustomization_lists_every_manifest(self):
        (k,) = load(os.path.join(K8S, "kustomization.yaml"))
        top = {n for n in os.listdir(K8S) if n.endswith(".yaml") and n != "kustomization.yaml"}
        self.assertEqual(set(k["resources"]), top)

    def test_mutating_component_swaps_the_webhook_for_the_mutating_one(self):
        """mutating/: /mutate in place of /validate, never both."""
        (c,) = load(os.path.join(K8S, "mutating", "kustomization.yaml"))
        self.assertEqual(c["kind"], "Component")
        self.assertEqual(c["resources"], ["mutating-webhook.yaml"])
        (patch,) = c["patches"]
        deleted = yaml.safe_load(patch["patch"])
        self.assertEqual(deleted["$patch"], "delete")
        validating = one("ValidatingWebhookConfiguration")
        self.assertEqual((deleted["kind"], deleted["apiVersion"], deleted["metadata"]["name"]),
                         (validating["kind"], validating["apiVersion"],
                          validating["metadata"]["name"]))
        # Off unless the base's kustomization enables it (commented there).
        with open(os.path.join(K8S, "kustomization.yaml")) as f:
            self.assertIn("# components:\n#   - mutating\n", f.read())
        (k,) = load(os.path.join(K8S, "kustomization.yaml"))
        self.assertNotIn("components", k)
        mutating = one("MutatingWebhookConfiguration")
        (v,) = validating["webhooks"]
        (m,) = mutating["webhooks"]
        self.assertEqual(m["name"], "mutate.oomguard.io")
        self.assertEqual(m["clientConfig"]["service"]["path"], "/mutate")
        # One check per object: never called again after another webhook.
        self.assertEqual(m["reinvocationPolicy"], "Never")
        # Everything else as the validating webhook's (test_webhook_configuration).
        same = lambda w: {k: v for k, v in w.items() if k not in ("name", "reinvocationPolicy")}
        m_rest, v_rest = same(m), same(v)
        m_rest["clientConfig"] = dict(m["clientConfig"], service=dict(
            m["clientConfig"]["service"], path="/validate"))
        self.assertEqual(m_rest, v_rest)
        self.assertEqual(mutating["metadata"], validating["metadata"])
        with open(os.path.join(K8S, "README.md")) as f:
            readme = f.read()
        self.assertIn("**instead of** `/validate`, never both", readme)

    def test_deployment_is_hardened(self):
        d = one("Deployment")
        pod = d["spec"]["template"]["spec"]
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(pod["securityContext"]["runAsUser"], 0)
        self.assertEqual(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        self.assertFalse(pod["automountServiceAccountToken"])
        (c,) = pod["containers"]
        sc = c["securityContext"]
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["runAsNonRoot"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        for kind in ("requests", "limits"):
            self.assertIn("cpu", c["resources"][kind])
            self.assertIn("memory", c["resources"][kind])
        self.assertGreaterEqual(d["spec"]["replicas"], 2)

    def test_probes_use_the_grpc_health_service(self):
        pod = one("Deployment")["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        grpc_port = {p["name"]: p["containerPort"] for p in c["ports"]}["grpc"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            self.assertEqual(c[probe]["grpc"]["port"], grpc_port, probe)
        self.assertEqual(c["readinessProbe"]["grpc"]["service"], "oomguard.v1.Oomguard")

    def test_flags_exist_and_ports_line_up(self):
        pod = one("Deployment")["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        f = flags(c["args"])
        with open(os.path.join(REPO, "tools", "serve_flags.cc")) as src:
            known = set(re.findall(r"ABSL_FLAG\(\s*[\w:]+,\s*(\w+),", src.read()))
        self.assertLessEqual(set(f), known)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(f["grpc_address"], f"0.0.0.0:{ports['grpc']}")
        self.assertEqual(f["metrics_address"], f"0.0.0.0:{ports['metrics']}")
        self.assertEqual(f["webhook_address"], f"0.0.0.0:{ports['webhook']}")
        # TLS files from the Secret's mount.
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        secret = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        self.assertEqual(secret["webhook-tls"], "oomguard-webhook-tls")
        self.assertEqual(f["webhook_tls_cert"], mounts["webhook-tls"] + "/tls.crt")
        self.assertEqual(f["webhook_tls_key"], mounts["webhook-tls"] + "/tls.key")
        self.assertNotIn("webhook_insecure_http_for_testing", f)
        # SIGTERM drain fits in the grace period.
        grace = int(f["shutdown_grace"].rstrip("s"))
        pause = int(c["lifecycle"]["preStop"]["exec"]["command"][-1])
        self.assertGreater(pod["terminationGracePeriodSeconds"], grace + pause)
        # A check ends before the API server gives up.
        timeout = one("ValidatingWebhookConfiguration")["webhooks"][0]["timeoutSeconds"]
        self.assertLess(int(f["webhook_check_timeout"].rstrip("s")), timeout)

    def test_service_routes_to_the_named_ports(self):
        d = one("Deployment")
        s = one("Service")
        self.assertEqual(s["spec"]["selector"], d["spec"]["selector"]["matchLabels"])
        (c,) = d["spec"]["template"]["spec"]["containers"]
        names = {p["name"] for p in c["ports"]}
        for p in s["spec"]["ports"]:
            self.assertIn(p["targetPort"], names)

    def test_webhook_configuration(self):
        cfg = one("ValidatingWebhookConfiguration")
        (w,) = cfg["webhooks"]
        self.assertEqual(w["admissionReviewVersions"], ["v1"])
        self.assertEqual(w["sideEffects"], "None")
        self.assertEqual(w["failurePolicy"], "Ignore")
        self.assertTrue(1 <= w["timeoutSeconds"] <= 5)
        self.assertEqual(w["namespaceSelector"]["matchLabels"], {"oomguard.io/admission": "enabled"})
        self.assertEqual(w["objectSelector"]["matchExpressions"][0]["key"], "oomguard.io/skip")
        svc = one("Service")
        ref = w["clientConfig"]["service"]
        self.assertEqual((ref["namespace"], ref["name"]),
                         (svc["metadata"]["namespace"], svc["metadata"]["name"]))
        self.assertEqual(ref["path"], "/validate")
        webhook_port = {p["name"]: p["port"] for p in svc["spec"]["ports"]}["webhook"]
        self.assertEqual(ref["port"], webhook_port)
        rules = {(r["apiGroups"][0], r["apiVersions"][0], r["resources"][0]): r["operations"]
                 for r in w["rules"]}
        self.assertEqual(rules, {("", "v1", "pods"): ["CREATE"],
                                 ("batch", "v1", "jobs"): ["CREATE"],
                                 ("kubeflow.org", "v1", "pytorchjobs"): ["CREATE"],
                                 ("jobset.x-k8s.io", "v1alpha2", "jobsets"): ["CREATE"]})
        # cert-manager's CA injection points at the Certificate of certs/.
        cert = [d for d in load(os.path.join(K8S, "certs", "cert-manager.yaml"))
                if d["kind"] == "Certificate" and not d["spec"].get("isCA")][0]
        self.assertEqual(cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                         f"{cert['metadata']['namespace']}/{cert['metadata']['name']}")
        self.assertEqual(cert["spec"]["secretName"], "oomguard-webhook-tls")
        self.assertIn(f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc",
                      cert["spec"]["dnsNames"])

    def test_network_policy_lets_only_the_api_server_reach_the_webhook(self):
        d = one("Deployment")
        policy = one("NetworkPolicy")
        self.assertEqual(policy["metadata"]["namespace"], d["metadata"]["namespace"])
        self.assertEqual(policy["spec"]["podSelector"]["matchLabels"],
                         d["spec"]["selector"]["matchLabels"])
        self.assertEqual(policy["spec"]["policyTypes"], ["Ingress"])
        (c,) = d["spec"]["template"]["spec"]["containers"]
        container_ports = {p["name"] for p in c["ports"]}
        sources = {}  # Named port -> the `from` entries that reach it.
        for rule in policy["spec"]["ingress"]:
            self.assertTrue(rule.get("from"), "a rule without `from` admits everyone")
            for p in rule["ports"]:
                self.assertIn(p["port"], container_ports)
                sources.setdefault(p["port"], []).extend(rule["from"])
        # Every port the Deployment serves is reachable by someone.
        self.assertEqual(set(sources), container_ports)
        # The webhook: IP blocks only (the API server's), never every pod.
        for peer in sources["webhook"]:
            self.assertEqual(set(peer), {"ipBlock"}, peer)
            self.assertNotEqual(peer["ipBlock"]["cidr"], "0.0.0.0/0")
        # gRPC and metrics: every pod in the cluster, as the Service offers them.
        for port in ("grpc", "metrics"):
            self.assertIn({"namespaceSelector": {}}, sources[port], port)
        # The install step says to set the API server's CIDR.
        with open(os.path.join(K8S, "README.md")) as f:
            readme = f.read()
        self.assertIn("networkpolicy.yaml's CIDR", readme)
        self.assertIn("## NetworkPolicy", readme)


class Dockerfile(unittest.TestCase):
    def test_multi_stage_debian_non_root(self):
        with open(os.path.join(DEPLOY, "container", "Dockerfile")) as f:
            text = f.read()
        froms = re.findall(r"^FROM (\S+)", text, re.M)
        self.assertEqual(froms, ["debian:bookworm", "debian:bookworm-slim"])
        self.assertRegex(text, r"(?m)^USER 65532:65532$")
        self.assertIn('ENTRYPOINT ["/usr/local/bin/oomguard", "serve"]', text)
        self.assertIn("COPY --from=build", text)
        # Every directory the build's CMakeLists.txt adds is copied in.
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            subdirs = re.findall(r"^add_subdirectory\((\w+)", f.read(), re.M)
        copied = set(re.findall(r"^COPY (\w+) ", text, re.M))
        self.assertLessEqual(set(subdirs) - {"bench"}, copied)


@unittest.skipUnless(shutil.which("kubectl"), "kubectl not installed")
class Kustomize(unittest.TestCase):
    def render(self, root):
        out = subprocess.run(["kubectl", "kustomize", root], check=True, capture_output=True,
                             text=True).stdout
        return [d for d in yaml.safe_load_all(out) if d is not None]

    def test_one_webhook_configuration_either_way(self):
        """As shipped: the validating webhook; with the component: the mutating one only."""
        kinds = lambda docs: sorted(d["kind"] for d in docs if d["kind"].endswith("WebhookConfiguration"))
        self.assertEqual(kinds(self.render(K8S)), ["ValidatingWebhookConfiguration"])
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "kubernetes")
            shutil.copytree(K8S, copy)
            path = os.path.join(copy, "kustomization.yaml")
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(text.replace("# components:\n#   - mutating\n", "components:\n  - mutating\n"))
            docs = self.render(copy)
            self.assertEqual(kinds(docs), ["MutatingWebhookConfiguration"])
            (m,) = [d for d in docs if d["kind"] == "MutatingWebhookConfiguration"]
            self.assertEqual(m["webhooks"][0]["clientConfig"]["service"]["path"], "/mutate")
            # Everything else as shipped.
            self.assertEqual(len(docs), len(self.render(K8S)))


@unittest.skipUnless(shutil.which("openssl"), "openssl CLI not installed")
class MakeCerts(unittest.TestCase):
    def test_makes_a_chain_the_ca_bundle_verifies(self):
        with tempfile.TemporaryDirectory() as out:
            script = os.path.join(K8S, "certs", "make-certs.sh")
            subprocess.run([script, out], check=True, capture_output=True)
            with open(os.path.join(out, "ca.crt"), "rb") as f:
                ca = f.read()
            (secret,) = load(os.path.join(out, "secret.yaml"))
            self.assertEqual(secret["type"], "kubernetes.io/tls")
            self.assertEqual(secret["metadata"]["name"], "oomguard-webhook-tls")
            for config in ("validating-webhook.yaml", "mutating-webhook.yaml"):
                (cfg,) = load(os.path.join(out, config))
                bundle = base64.b64decode(cfg["webhooks"][0]["clientConfig"]["caBundle"])
                self.assertEqual(bundle, ca, config)
                self.assertNotIn("annotations", cfg["metadata"], config)
            crt = os.path.join(out, "served.crt")
            with open(crt, "wb") as f:
                f.write(base64.b64decode(secret["data"]["tls.crt"]))
            subprocess.run(["openssl", "verify", "-CAfile", os.path.join(out, "ca.crt"), crt],
                           check=True, capture_output=True)
            text = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-text"],
                                  check=True, capture_output=True, text=True).stdout
            self.assertIn("DNS:oomguard.oomguard.svc,", text)
            self.assertIn("TLS Web Server Authentication", text)
            # Renewal keeps the CA, so caBundle stays valid.
            subprocess.run([script, out], check=True, capture_output=True)
            with open(os.path.join(out, "ca.crt"), "rb") as f:
                self.assertEqual(f.read(), ca)


if __name__ == "__main__":
    unittest.main()
