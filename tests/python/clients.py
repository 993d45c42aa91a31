"""The official Kubernetes Python client (kubernetes on PyPI), unmodified, against farm-apiserver.

Run by tests/python_client.rs with the interpreter scripts/install-tools.sh installs, against the
standalone server and through a real kube-apiserver's aggregator:

    python clients.py NAMESPACE        # KUBECONFIG names the cluster

Creates, patches (merge and JSON patch), writes the status subresource, applies server-side
through the dynamic client (a conflict, then force), and watches, asserting what the
kube-apiserver returns for a CustomResourceDefinition. Exits non-zero with the failed assertion.
"""

import json
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

GROUP, VERSION, PLURAL = "farm.example.com", "v1alpha", "llamas"
API_VERSION = f"{GROUP}/{VERSION}"


def llama(name, **spec):
    return {"apiVersion": API_VERSION, "kind": "Llama", "metadata": {"name": name}, "spec": spec}


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def managers(obj):
    """(manager, operation, subresource) of each managedFields entry."""
    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata.to_dict()
    return sorted((m["manager"], m["operation"], m.get("subresource") or "") for m in meta["managedFields"])


def watch_names(custom, namespace, resource_version, events, until):
    """Collects (type, name) of every event after resource_version until `until` is deleted."""
    watcher = watch.Watch()
    stream = watcher.stream(custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL,
                            resource_version=resource_version, timeout_seconds=60)
    for event in stream:
        events.append((event["type"], event["object"]["metadata"]["name"]))
        if event["type"] == "DELETED" and event["object"]["metadata"]["name"] == until:
            watcher.stop()


def typed_api(custom, namespace, events):
    """CustomObjectsApi: create without a Content-Type, merge and JSON patch, status, get, delete."""
    args = (GROUP, VERSION, namespace, PLURAL)
    created = custom.create_namespaced_custom_object(*args, llama("py-dolly", weight=120, height=170.5))
    expect(created["metadata"]["generation"] == 1, created)
    # The manager is the User-Agent's product, as the kube-apiserver derives it.
    expect(managers(created) == [("OpenAPI-Generator", "Update", "")], managers(created))

    merged = custom.patch_namespaced_custom_object(*args, "py-dolly", {"spec": {"color": "brown"}})
    expect(merged["spec"] == {"weight": 120, "height": 170.5, "color": "brown"}, merged["spec"])
    expect(merged["metadata"]["generation"] == 2, merged["metadata"])
    # The client sends every patch as a merge patch unless told otherwise.
    jsonpatched = custom.patch_namespaced_custom_object(
        *args, "py-dolly", [{"op": "replace", "path": "/spec/weight", "value": 130}],
        _content_type="application/json-patch+json")
    expect(jsonpatched["spec"]["weight"] == 130 and jsonpatched["metadata"]["generation"] == 3, jsonpatched)

    condition = {"type": "Ready", "status": "True", "reason": "Grazing", "message": "calm",
                 "lastTransitionTime": "2026-11-23T10:00:00Z", "observedGeneration": 3}
    status = {"status": {"observedGeneration": 3, "conditions": [condition]}}
    written = custom.patch_namespaced_custom_object_status(*args, "py-dolly", status)
    expect(written["status"] == status["status"], written.get("status"))
    expect(written["metadata"]["generation"] == 3, "a status write leaves the generation alone")
    expect(("OpenAPI-Generator", "Update", "status") in managers(written), managers(written))
    # A status write ignores the spec; a write of the object ignores the status.
    ignored = custom.patch_namespaced_custom_object_status(*args, "py-dolly", {"spec": {"weight": 1}})
    expect(ignored["spec"]["weight"] == 130, ignored["spec"])
    read = custom.get_namespaced_custom_object_status(*args, "py-dolly")
    expect(read["status"]["conditions"][0]["type"] == "Ready", read)

    try:
        custom.create_namespaced_custom_object(*args, llama("py-dolly", weight=1, height=1))
        raise AssertionError("a second create of py-dolly succeeded")
    except ApiException as e:
        body = json.loads(e.body)
        expect(e.status == 409 and body["reason"] == "AlreadyExists", (e.status, body))
        expect(body["message"] == 'llamas.farm.example.com "py-dolly" already exists', body["message"])
    try:
        custom.create_namespaced_custom_object(*args, llama("py-invalid", weight=-1, height=1))
        raise AssertionError("a llama of negative weight was created")
    except ApiException as e:
        body = json.loads(e.body)
        expect(e.status == 422 and body["details"]["causes"][0]["field"] == "spec.weight", body)

    custom.delete_namespaced_custom_object(*args, "py-dolly")
    try:
        custom.get_namespaced_custom_object(*args, "py-dolly")
        raise AssertionError("py-dolly is still there")
    except ApiException as e:
        expect(e.status == 404, e.status)


def server_side_apply(api, namespace):
    """The dynamic client: discovery, server-side apply, a conflict, force, and the status."""
    dynamic = DynamicClient(api)
    llamas = dynamic.resources.get(api_version=API_VERSION, kind="Llama")
    expect("status" in llamas.subresources, "discovery lists llamas/status")
    body = llama("py-apply", weight=3, height=1.5, color="white")
    applied = dynamic.server_side_apply(llamas, body=body, namespace=namespace, field_manager="gitops")
    expect(managers(applied) == [("gitops", "Apply", "")], managers(applied))
    expect(applied.spec.color == "white", applied.spec)

    body["spec"]["color"] = "black"
    try:
        dynamic.server_side_apply(llamas, body=body, namespace=namespace, field_manager="intruder")
        raise AssertionError("a conflicting apply succeeded")
    except ApiException as e:
        status = json.loads(e.body)
        expect(e.status == 409 and status["reason"] == "Conflict", status)
        expect(status["message"] == 'Apply failed with 1 conflict: conflict with "gitops": .spec.color',
               status["message"])
        expect(status["details"]["causes"] == [
            {"reason": "FieldManagerConflict", "message": 'conflict with "gitops"', "field": ".spec.color"}],
            status["details"])
    forced = dynamic.server_side_apply(llamas, body=body, namespace=namespace, field_manager="intruder",
                                       force_conflicts=True)
    expect(forced.spec.color == "black", forced.spec)
    expect(managers(forced) == [("gitops", "Apply", ""), ("intruder", "Apply", "")], managers(forced))

    ready = {"apiVersion": API_VERSION, "kind": "Llama", "metadata": {"name": "py-apply"},
             "status": {"observedGeneration": forced.metadata.generation,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "Applied", "message": "",
                                        "lastTransitionTime": "2026-11-23T10:00:00Z"}]}}
    status = dynamic.server_side_apply(llamas.status, body=ready, namespace=namespace, field_manager="controller")
    expect(status.status.conditions[0].reason == "Applied", status.status)
    expect(("controller", "Apply", "status") in managers(status), managers(status))
    listed = dynamic.get(llamas, namespace=namespace)
    expect([item.metadata.name for item in listed.items] == ["py-apply"], listed.items)
    dynamic.delete(llamas, name="py-apply", namespace=namespace)


def main():
    namespace = sys.argv[1]
    config.load_kube_config()
    api = client.ApiClient()
    custom = client.CustomObjectsApi(api)
    start = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    expect(start["items"] == [], "the namespace starts empty")
    events = []
    watcher = threading.Thread(target=watch_names,
                               args=(custom, namespace, start["metadata"]["resourceVersion"], events, "py-apply"))
    watcher.start()
    typed_api(custom, namespace, events)
    server_side_apply(api, namespace)
    watcher.join(timeout=60)
    expect(not watcher.is_alive(), f"the watch did not see py-apply deleted: {events}")
    dolly = [kind for kind, name in events if name == "py-dolly"]
    expect(dolly == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"], f"py-dolly's events: {dolly}")
    applied = [kind for kind, name in events if name == "py-apply"]
    expect(applied == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"], f"py-apply's events: {applied}")
    print(f"python client: {len(events)} watch events, every assertion held")


if __name__ == "__main__":
    main()
