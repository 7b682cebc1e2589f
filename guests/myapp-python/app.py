"""The seed's MyApp controller logic in Python.

The same rules, answers and error messages as the Rust guest (guests/myapp/src/lib.rs), checked against
the same fixtures by the host's conformance suite.

A `MyApp` (`spec.replicas`, default 1; `spec.image`, default `nginx:alpine`) wants one Deployment
`<name>-deploy` running that image, and reports `status.phase`: `Created` until the observed Deployment
has as many ready replicas as asked, then `Ready`.

componentize-py generates the `wit_world` package from wit/v0.1.0/reconciler.wit (contract 0.1.0) at build time: the world's export
is the `reconcile` method of a class `WitWorld`, the records are dataclasses, an `option` is a value or
`None`, and the `err` case of a `result` is raised as `componentize_py_types.Err`.
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import log
from wit_world.imports.types import Request, Response

DEFAULT_REPLICAS = 1
DEFAULT_IMAGE = "nginx:alpine"
MAX_REPLICAS = 2147483647


class Rejection(Exception):
    """An invalid input: its message is the guest's `err`."""


class WitWorld(wit_world.WitWorld):
    def reconcile(self, req: Request) -> Response:
        if req.finalizing:
            # Nothing to clean up beyond what the host prunes; a bad spec must not block deletion.
            return Response(children=[], status=None, requeue_after_seconds=None, finalized=True)
        try:
            return desired(req.parent, req.children)
        except Rejection as e:
            message = str(e)
        except Exception as e:  # a bug here must still be an answer, not a trap
            message = f"internal error: {e!r}"
        log.emit(log.Level.WARN, message)
        raise Err(message)


def desired(parent_json: str, children_json: list[str]) -> Response:
    parent = parse(parent_json, "parent")
    name = field(field(parent, "metadata"), "name")
    if not isinstance(name, str) or name == "":
        raise Rejection("parent has no metadata.name")
    if len(name.encode()) > 63:
        # The name is also the `app` label value, which Kubernetes caps at 63 characters.
        raise Rejection(
            f'metadata.name "{name}" is longer than 63 characters, too long for the app label'
        )
    namespace = field(field(parent, "metadata"), "namespace")
    replicas, image = spec(parent)

    deploy_name = f"{name}-deploy"
    ready = observed_ready_replicas(children_json, deploy_name)
    status = {
        "phase": "Ready" if ready == replicas else "Created",
        "replicas": replicas,
        "readyReplicas": ready if ready is not None else 0,
    }
    deployment = deployment_for(
        name, namespace if isinstance(namespace, str) else None, deploy_name, replicas, image
    )
    return Response(
        children=[to_json(deployment)],
        status=to_json(status),
        requeue_after_seconds=None,
        finalized=False,
    )


def spec(parent) -> tuple[int, str]:
    """`spec.replicas` and `spec.image`, with their defaults; an absent or `null` field takes its default."""
    spec = field(parent, "spec")
    if spec is None:
        return DEFAULT_REPLICAS, DEFAULT_IMAGE
    if not isinstance(spec, dict):
        raise Rejection(f"spec must be an object, got {to_json(spec)}")
    replicas = spec.get("replicas")
    if replicas is None:
        replicas = DEFAULT_REPLICAS
    elif not is_int(replicas) or not 0 <= replicas <= MAX_REPLICAS:
        raise Rejection(
            f"spec.replicas must be an integer from 0 to {MAX_REPLICAS}, got {to_json(replicas)}"
        )
    image = spec.get("image")
    if image is None:
        image = DEFAULT_IMAGE
    elif not isinstance(image, str) or image.strip() == "":
        raise Rejection(f"spec.image must be a non-empty string, got {to_json(image)}")
    return replicas, image


def observed_ready_replicas(children_json: list[str], deploy_name: str) -> int | None:
    """`status.readyReplicas` of the observed Deployment `deploy_name` (0 when it has none yet), or
    `None` when no such Deployment was observed."""
    for i, text in enumerate(children_json):
        child = parse(text, f"observed child {i}")
        if (
            field(child, "kind") == "Deployment"
            and field(field(child, "metadata"), "name") == deploy_name
        ):
            ready = field(field(child, "status"), "readyReplicas")
            return ready if is_int(ready) else 0
    return None


def deployment_for(name: str, namespace: str | None, deploy_name: str, replicas: int, image: str):
    """The desired Deployment, as the seed's `create_deployment` builds it."""
    metadata = {"name": deploy_name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": image, "ports": [{"containerPort": 80}]}
                    ],
                },
            },
        },
    }


def parse(text: str, what: str):
    try:
        return json.loads(text)
    except ValueError as e:
        raise Rejection(f"{what} is not valid JSON: {e}") from None


def field(obj, key: str):
    """`obj[key]` if `obj` is a JSON object holding `key`, else `None`."""
    return obj.get(key) if isinstance(obj, dict) else None


def is_int(value) -> bool:
    """A JSON integer (Python's `bool` is an `int`, JSON's is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def to_json(value) -> str:
    """Compact JSON, as serde_json writes it (also in error messages)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
