"""The related-objects example in Python.

The same rules, answers and error messages as the Rust guest (guests/configured/src/lib.rs), checked
against the same fixtures by the host's conformance suite.

A `ConfiguredApp` (`spec.image`, `spec.configMapName`, optional `spec.replicas`, default 1) runs one
Deployment `<name>` whose pods mount the ConfigMap its spec names at `/etc/config`. `related` asks for that
ConfigMap (a selector by name), so the host hands it over read-only in `request.related` and reconciles the
parent again when it changes; the hash of its data goes into a pod-template annotation, so an edit rolls
the pods. A missing ConfigMap is a state (`status.configMap: Missing`), not an error.

componentize-py generates the `wit_world` package from wit/reconciler.wit (contract 0.2.0, world
`relating-reconciler`) at build time: the world's exports are the `related` and `reconcile` methods of a
class `WitWorld`, the records (`Selector`, `Request`, `Response`) are dataclasses, an `option` is a value
or `None`, and the `err` case of a `result` is raised as `componentize_py_types.Err`.
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import log
from wit_world.imports.types import Request, Response, Selector

HASH_ANNOTATION = "example.com/config-hash"
"""The annotation on the pod template that rolls the pods when the configuration changes."""


class Rejection(Exception):
    """An invalid input: its message is the guest's `err`."""


class WitWorld(wit_world.WitWorld):
    def related(self, parent: str) -> list[Selector]:
        return answer(lambda: wanted(parent))

    def reconcile(self, req: Request) -> Response:
        if req.finalizing:
            return Response(children=[], status=None, requeue_after_seconds=None, finalized=True)
        return answer(lambda: desired(req.parent, req.related))


def answer(compute):
    """Runs `compute`, turning a rejection (or a bug) into the `err` the host reports on the parent."""
    try:
        return compute()
    except Rejection as e:
        message = str(e)
    except Exception as e:  # a bug here must still be an answer, not a trap
        message = f"internal error: {e!r}"
    log.emit(log.Level.WARN, message)
    raise Err(message)


def wanted(parent_json: str) -> list[Selector]:
    spec = mapping(parse(parent_json, "parent").get("spec"))
    namespace = spec.get("configMapNamespace")
    return [
        Selector(
            api_version="v1",
            kind="ConfigMap",
            namespace=namespace if isinstance(namespace, str) else None,
            names=[config_map_name(spec)],
            label_selector=None,
        )
    ]


def desired(parent_json: str, related_json: list[str]) -> Response:
    parent = parse(parent_json, "parent")
    metadata = mapping(parent.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str):
        raise Rejection("parent has no metadata.name")
    spec = mapping(parent.get("spec"))
    # A cluster-scoped parent has no namespace of its own: it names its Deployment's.
    given = (metadata.get("namespace"), spec.get("namespace"))
    namespace = next((ns for ns in given if isinstance(ns, str) and ns), "default")
    image = spec.get("image")
    if not isinstance(image, str) or image == "":
        raise Rejection("spec.image is required")
    config_map = config_map_name(spec)
    replicas = spec.get("replicas")
    if replicas is None:
        replicas = 1
    elif isinstance(replicas, bool) or not isinstance(replicas, int) or not 0 <= replicas <= 100:
        raise Rejection("spec.replicas must be an integer from 0 to 100")

    found = None
    for text in related_json:
        obj = parse(text, "related")
        if obj.get("kind") == "ConfigMap" and mapping(obj.get("metadata")).get("name") == config_map:
            found = obj
            break
    digest = config_hash(found) if found is not None else "missing"
    labels = {"app.kubernetes.io/name": "configured", "app.kubernetes.io/instance": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {HASH_ANNOTATION: digest}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/config", "readOnly": True}
                            ],
                        }
                    ],
                    # Optional: the pods start without it, and roll once it exists.
                    "volumes": [
                        {"name": "config", "configMap": {"name": config_map, "optional": True}}
                    ],
                },
            },
        },
    }
    status = {"configMap": "Found" if found is not None else "Missing", "configHash": digest}
    return Response(
        children=[json.dumps(deployment)],
        status=json.dumps(status),
        requeue_after_seconds=None,
        finalized=False,
    )


def config_map_name(spec: dict) -> str:
    name = spec.get("configMapName")
    if not isinstance(name, str) or name == "":
        raise Rejection("spec.configMapName is required")
    return name


def config_hash(config_map: dict) -> str:
    """The Rust guest's hash, bit for bit: 64-bit FNV-1a over the UTF-8 bytes of `[data, binaryData]` as
    compact JSON with sorted keys (missing fields are `null`)."""
    content = json.dumps(
        [config_map.get("data"), config_map.get("binaryData")],
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    )
    digest = 0xCBF29CE484222325
    for byte in content.encode():
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}"


def parse(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise Rejection(f"{what}: {e}") from None
    return mapping(value)


def mapping(value) -> dict:
    """`value` if it is a JSON object, else an empty one (as a missing field reads in the Rust guest)."""
    return value if isinstance(value, dict) else {}
